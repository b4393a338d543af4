"""The URL filter chain (Nutch's URLFilters): the active url-filter plugins in `urlfilter.order`, behind a length
check (`urlfilter.max.length`); a URL is kept when every filter keeps it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.mapred import hangs
from nutch2.plugin.extension import Extension, fix_hint

DEFAULT_MAX_LENGTH = 2048

log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()  # (point, plugin) already named in this process


def plugin_failed(point: str, plugin: Any, url: str, e: BaseException) -> None:
    """A URL filter or normalizer raised on `url`: the URL is dropped, as Nutch drops it, and the first time in
    this process one line names the plugin, what it raised and the fix."""
    name = getattr(plugin, "plugin_id", "") or type(plugin).__name__
    if (point, name) not in _warned:
        _warned.add((point, name))
        log.warning(f"{point} {name} raised {type(e).__name__}: {e} on {url}; that URL (and any other it raises "
                    f"on) is dropped: {fix_hint(name)}")


class URLFilter(Extension):
    """urlfilter-*: keep a URL (return it) or drop it (None)."""

    point: ClassVar[str] = "url-filter"

    def filter(self, url: str) -> str | None:
        raise NotImplementedError

    def explain(self, url: str) -> str | None:
        """What decided about ``url`` (a rule, a list entry) for filterchecker; None when nothing specific."""
        return None


class URLFilters:
    """A chain of URL filters (anything with ``filter(url) -> url | None``) behind a length check."""

    def __init__(self, filters: Iterable[Any] = (), max_length: int = DEFAULT_MAX_LENGTH) -> None:
        self.filters = list(filters)
        self.max_length = max_length
        # a crawl asks about the same URLs again and again (outlinks of every page of a host, then generate)
        self.filter = lru_cache(maxsize=65536)(self._filter)  # type: ignore[method-assign]
        hangs.start()  # a filter that never returns is named with its URL (a dict store per call on its path)

    @classmethod
    def from_conf(cls, conf: Configuration) -> URLFilters:
        """The active url-filter plugins, built from the configuration, in urlfilter.order."""
        from nutch2.plugin import Plugins

        return cls(Plugins(conf).build("url-filter"), conf.get_int("urlfilter.max.length"))

    def __getstate__(self) -> dict:
        """Pickled as its filters (a job ships them to worker processes); the cache is made anew."""
        return {"filters": self.filters, "max_length": self.max_length}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["filters"], state["max_length"])  # type: ignore[misc]

    def filter(self, url: str) -> str | None:
        """``url`` when every filter accepts it and it is not too long (max_length <= 0: no limit)."""
        return self._filter(url)

    def named(self, name: str) -> URLFilters:
        """The chain with only the filter of plugin `name` (filterchecker -filterName), without the length check."""
        return URLFilters([f for f in self.filters if getattr(f, "plugin_id", None) == name], max_length=0)

    def without(self, name: str) -> URLFilters:
        """The chain without the filter of plugin `name` (a rendered page's resources skip urlfilter-suffix)."""
        return URLFilters([f for f in self.filters if getattr(f, "plugin_id", None) != name], self.max_length)

    def describe(self) -> list[str]:
        """One line per check of the chain, in order (filterchecker -listFilters): the plugin and what it reads."""
        lines = [f"urlfilter.max.length\tURLs longer than {self.max_length} characters are dropped"] \
            if self.max_length > 0 else []
        for f in self.filters:
            what = getattr(f, "describe", None)
            lines.append(f"{getattr(f, 'plugin_id', '') or type(f).__name__}" + (f"\t{what()}" if what else ""))
        return lines

    def explain(self, url: str) -> tuple[bool, str]:
        """(kept, what decided) for one URL, as filterchecker prints it: the filter that dropped it, or what each
        filter that says why kept it ("; " between them)."""
        if 0 < self.max_length < len(url):
            return False, f"urlfilter.max.length: longer than {self.max_length} characters"
        kept_by = []
        for url_filter in self.filters:
            name = getattr(url_filter, "plugin_id", "") or type(url_filter).__name__
            try:
                why = url_filter.explain(url) if hasattr(url_filter, "explain") else None
                kept = url_filter.filter(url) is not None
            except Exception as e:  # noqa: BLE001 - the checker names the plugin's bug as what dropped the URL
                return False, f"{name}: raised {type(e).__name__}: {e} ({fix_hint(name)})"
            if not kept:
                return False, f"{name}: {why}" if why else name
            if why:
                kept_by.append(f"{name}: {why}")
        return True, "; ".join(kept_by) or "no filter rejects it"

    def _filter(self, url: str) -> str | None:
        if 0 < self.max_length < len(url):
            return None
        result: str | None = url
        tid, outer = hangs.current()
        try:
            for url_filter in self.filters:
                _calls[tid] = (_SITE, url_filter, url, None)  # for hangs: the call a stuck thread is in
                try:
                    result = url_filter.filter(result)
                except Exception as e:  # noqa: BLE001 - a plugin's bug drops the URL, as in Nutch, named once
                    plugin_failed("url filter", url_filter, url, e)
                    return None
                if result is None:
                    return None
            return result
        finally:
            hangs.leave(tid, outer)  # back to the call it was in (a site that called it), if any

    def close(self) -> None:
        for url_filter in self.filters:
            close = getattr(url_filter, "close", None)
            if close is not None:
                close()


_SITE = hangs.Site("url filter", fix_hint)
_calls = hangs.calls
