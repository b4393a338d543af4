"""scoring-opic: the OPIC scoring filter; the cash is kept in the row's metadata, as Nutch 2 does."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.scoring import ScoreDatum, ScoringFilter
from nutch2.rowkeys import CASH_KEY
from nutch2.urls.domains import host_of
from nutch2.webpage import WebPage


def get_cash(page: WebPage) -> float:
    raw = page.metadata.get(CASH_KEY)
    return float(raw.decode("ascii")) if raw else 0.0


def set_cash(page: WebPage, cash: float) -> None:
    page.metadata[CASH_KEY] = repr(float(cash)).encode("ascii")


class OPICScoringFilter(ScoringFilter):
    """Inject, new rows, generate's sort value, outlink distribution, update and the index boost."""

    nutch_class = "org.apache.nutch.scoring.opic.OPICScoringFilter"
    fields = ("score", "metadata")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.internal = conf.get_float("db.score.link.internal")
        self.external = conf.get_float("db.score.link.external")
        self.new_score = conf.get_float("db.score.link.new")
        self.power = conf.get_float("indexer.score.power")

    def injected_score(self, url: str, page: WebPage) -> None:
        set_cash(page, page.score)

    def initial_score(self, url: str, page: WebPage) -> None:
        page.score = self.new_score
        set_cash(page, 0.0)

    def generator_sort_value(self, url: str, page: WebPage, value: float) -> float:
        """Generate sorts by score × the value so far (score² with the score as the start, as Nutch)."""
        return page.score * value

    def distribute_score_to_outlinks(self, url: str, page: WebPage, outlinks: list[ScoreDatum],
                                     all_count: int) -> None:
        """Each outlink gets cash / count, times the internal or external factor; the page's cash is spent."""
        if not outlinks:
            return
        share = get_cash(page) / max(all_count, 1)
        set_cash(page, 0.0)
        host = host_of(url)
        for datum in outlinks:
            datum.score = share * (self.internal if host_of(datum.url) == host else self.external)

    def update_score(self, url: str, page: WebPage, inlinks: list[ScoreDatum]) -> None:
        """Add the cash received from inlinks to the score and to the cash."""
        total = sum(d.score for d in inlinks)
        if total:
            page.score = page.score + total
            set_cash(page, get_cash(page) + total)

    def indexer_score(self, url: str, doc: dict[str, Any], page: WebPage, score: float) -> float:
        return max(page.score, 0.0) ** self.power * score
