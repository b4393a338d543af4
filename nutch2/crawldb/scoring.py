"""OPIC scoring (Nutch's scoring-opic): score and cash on each row, cash shared among outlinks."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.webpage import WebPage

CASH_KEY = "_csh_"  # metadata key holding the row's OPIC cash, as Nutch 2 does


def get_cash(page: WebPage) -> float:
    raw = page.metadata.get(CASH_KEY)
    return float(raw.decode("ascii")) if raw else 0.0


def set_cash(page: WebPage, cash: float) -> None:
    page.metadata[CASH_KEY] = repr(float(cash)).encode("ascii")


class OpicScoring:
    """The OPIC scoring filter: inject, generate sort value, outlink distribution, update, index boost."""

    def __init__(self, conf: Configuration) -> None:
        self.internal = conf.get_float("db.score.link.internal")
        self.external = conf.get_float("db.score.link.external")
        self.new_score = conf.get_float("db.score.link.new")

    def injected(self, page: WebPage, score: float) -> None:
        page.score = score
        set_cash(page, score)

    def initial(self, page: WebPage) -> None:
        """A row created for a newly discovered outlink."""
        page.score = self.new_score
        set_cash(page, 0.0)

    @staticmethod
    def sort_value(page: WebPage) -> float:
        """Generate sorts by score² (Nutch's OPIC generatorSortValue)."""
        return page.score * page.score

    def distribute(self, page: WebPage, outlink_same_host: list[bool]) -> list[float]:
        """Cash each outlink receives (cash / count, times the internal or external factor); resets cash."""
        if not outlink_same_host:
            return []
        share = get_cash(page) / len(outlink_same_host)
        set_cash(page, 0.0)
        return [share * (self.internal if same else self.external) for same in outlink_same_host]

    @staticmethod
    def update(page: WebPage, inlink_scores: list[float]) -> None:
        """Add the cash received from inlinks to the score and to the cash."""
        total = sum(inlink_scores)
        if total:
            page.score = page.score + total
            set_cash(page, get_cash(page) + total)

    @staticmethod
    def index_boost(page: WebPage) -> float:
        return max(page.score, 0.0) ** 0.5
