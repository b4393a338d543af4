"""The scoring filter chain (Nutch's ScoringFilters): the active scoring-filter plugins in scoring.filter.order,
each applied in turn at inject, for new rows, for generate's sort, along links and for the index boost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.plugin.extension import Extension
from nutch2.webpage import WebPage


@dataclass
class ScoreDatum:
    """One link between two rows as the scoring filters see it (Nutch 2's ScoreDatum)."""

    url: str
    anchor: str = ""
    score: float = 0.0
    distance: int = 0


class ScoringFilter(Extension):
    """scoring-*: scores at inject, for new rows, for generate's sort, passed along links, and for the index."""

    point: ClassVar[str] = "scoring-filter"

    def injected_score(self, url: str, page: WebPage) -> None:
        """A row made by inject (page.score holds the seed's score)."""

    def initial_score(self, url: str, page: WebPage) -> None:
        """A row made for a newly found link."""

    def generator_sort_value(self, url: str, page: WebPage, value: float) -> float:
        return value

    def distribute_score_to_outlinks(self, url: str, page: WebPage, outlinks: list[ScoreDatum],
                                     all_count: int) -> None:
        """Set the score each outlink passes on (outlinks[i].score)."""

    def update_score(self, url: str, page: WebPage, inlinks: list[ScoreDatum]) -> None:
        """Take in what the row's inlinks passed on in this update."""

    def indexer_score(self, url: str, doc: dict[str, Any], page: WebPage, score: float) -> float:
        return score


class ScoringFilters:
    """The chain; with no scoring plugin active, scores stay as they are."""

    def __init__(self, filters: Iterable[Any]) -> None:
        self.filters = list(filters)

    @classmethod
    def from_conf(cls, conf: Configuration) -> ScoringFilters:
        from nutch2.plugin import Plugins

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
