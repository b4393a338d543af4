"""The scoring filter chain (Nutch's ScoringFilters): the active scoring-filter plugins in scoring.filter.order,
each applied in turn at inject, for new rows, for generate's sort, along links and for the index boost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.mapred import hangs
from nutch2.plugin.descriptor import PluginError
from nutch2.plugin.extension import Extension, fix_hint
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
        hangs.start()  # a scoring filter that never returns is named with its URL (a dict store per call on its path)

    @classmethod
    def from_conf(cls, conf: Configuration) -> ScoringFilters:
        from nutch2.plugin import Plugins

        return cls(Plugins(conf).build("scoring-filter"))

    def injected_score(self, url: str, page: WebPage) -> None:
        for f in self.filters:
            _call(f, "injected_score", url, page)

    def initial_score(self, url: str, page: WebPage) -> None:
        for f in self.filters:
            _call(f, "initial_score", url, page)

    def generator_sort_value(self, url: str, page: WebPage, value: float) -> float:
        for f in self.filters:
            value = _number(f, "generator_sort_value", url, _call(f, "generator_sort_value", url, page, value))
        return value

    def distribute_score_to_outlinks(self, url: str, page: WebPage, outlinks: list[ScoreDatum]) -> None:
        for f in self.filters:
            _call(f, "distribute_score_to_outlinks", url, page, outlinks, len(outlinks))

    def update_score(self, url: str, page: WebPage, inlinks: list[ScoreDatum]) -> None:
        for f in self.filters:
            _call(f, "update_score", url, page, inlinks)

    def indexer_score(self, url: str, doc: dict[str, Any], page: WebPage, score: float = 1.0) -> float:
        for f in self.filters:
            score = _number(f, "indexer_score", url, _call(f, "indexer_score", url, doc, page, score))
        return score

    def close(self) -> None:
        for f in self.filters:
            f.close()


def _call(f: Any, method: str, url: str, *args: Any) -> Any:
    """f.method(url, *args); a scoring filter that raises ends the job in one line naming it (a score is not
    left half-computed: the job runs again once it is fixed)."""
    tid, outer = hangs.current()
    _calls[tid] = (_SITE, f, url, method)  # for hangs: the call a stuck thread is in
    try:
        return getattr(f, method)(url, *args)
    except Exception as e:  # noqa: BLE001 - the user's plugin: named, with the fix, instead of a traceback
        name = getattr(f, "plugin_id", "") or type(f).__name__
        raise PluginError(f"scoring filter {name}: {method} raised {type(e).__name__}: {e} on {url}; "
                          f"{fix_hint(name)}") from e
    finally:
        hangs.leave(tid, outer)  # back to the call it was in (a site that called it), if any


def _number(f: Any, method: str, url: str, value: Any) -> float:
    """The value a scoring filter's method returned, which must be a number (a forgotten return is None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    name = getattr(f, "plugin_id", "") or type(f).__name__
    raise PluginError(f"scoring filter {name}: {method} returned {type(value).__name__}, not a number, on {url}; "
                      f"return the value it was given (changed or not)")


_SITE = hangs.Site("scoring filter", fix_hint)
_calls = hangs.calls

__all__ = ["ScoringFilters", "ScoreDatum"]
