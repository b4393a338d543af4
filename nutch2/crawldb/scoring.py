"""The scoring filter chain (Nutch's ScoringFilters): the active scoring-filter plugins in scoring.filter.order,
each applied in turn at inject, for new rows, for generate's sort, along links and for the index boost."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nutch2.config import Configuration
from nutch2.plugins.points import ScoreDatum
from nutch2.webpage import WebPage


class ScoringFilters:
    """The chain; with no scoring plugin active, scores stay as they are."""

    def __init__(self, filters: Iterable[Any]) -> None:
        self.filters = list(filters)

    @classmethod
    def from_conf(cls, conf: Configuration) -> ScoringFilters:
        from nutch2.plugins import Plugins

        return cls(Plugins(conf).build("scoring-filter"))

    def injected_score(self, url: str, page: WebPage) -> None:
        for f in self.filters:
            f.injected_score(url, page)

    def initial_score(self, url: str, page: WebPage) -> None:
        for f in self.filters:
            f.initial_score(url, page)

    def generator_sort_value(self, url: str, page: WebPage, value: float) -> float:
        for f in self.filters:
            value = f.generator_sort_value(url, page, value)
        return value

    def distribute_score_to_outlinks(self, url: str, page: WebPage, outlinks: list[ScoreDatum]) -> None:
        for f in self.filters:
            f.distribute_score_to_outlinks(url, page, outlinks, len(outlinks))

    def update_score(self, url: str, page: WebPage, inlinks: list[ScoreDatum]) -> None:
        for f in self.filters:
            f.update_score(url, page, inlinks)

    def indexer_score(self, url: str, doc: dict[str, Any], page: WebPage, score: float = 1.0) -> float:
        for f in self.filters:
            score = f.indexer_score(url, doc, page, score)
        return score

    def close(self) -> None:
        for f in self.filters:
            f.close()


__all__ = ["ScoringFilters", "ScoreDatum"]
