"""The URL normalizer chain (Nutch's URLNormalizers): the active url-normalizer plugins applied in turn for a scope;
a normalizer that gives None drops the URL.

Per scope, as Nutch: `urlnormalizer.scope.<scope>` names the normalizers the scope runs (all active ones when
empty) and `urlnormalizer.order.<scope>` their order (`urlnormalizer.order` when empty); the ones an order does not
name run after those it names. `urlnormalizer.loop.count` runs the chain again while it still changes the URL.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.mapred import hangs
from nutch2.plugin.extension import Extension, fix_hint
from nutch2.urls.filters import plugin_failed

# Scopes Nutch passes to its normalizers (a normalizer may treat them differently)
SCOPE_DEFAULT = "default"
SCOPES = frozenset({"default", "inject", "generate_host_count", "partition", "fetcher", "outlink", "indexer"})


class URLNormalizer(Extension):
    """urlnormalizer-*: the URL in its normal form for a scope (inject, fetcher, outlink, ...), or None to drop it."""

    point: ClassVar[str] = "url-normalizer"

    def normalize(self, url: str, scope: str) -> str | None:
        raise NotImplementedError

    def explain(self, url: str, scope: str) -> str | None:
        """What decided about ``url`` in ``scope`` (the rules that applied) for normalizerchecker; None when
        nothing specific."""
        return None


class URLNormalizers:
    """The normalizers of one scope, in order."""

    def __init__(self, normalizers: Iterable[Any] = (), scope: str = SCOPE_DEFAULT, loop_count: int = 1) -> None:
        self.normalizers = list(normalizers)
        self.scope = scope
        self.loop_count = max(loop_count, 1)
        hangs.start()  # a normalizer that never returns is named with its URL (a dict store per call on its path)

    @classmethod
    def from_conf(cls, conf: Configuration, scope: str = SCOPE_DEFAULT) -> URLNormalizers:
        """The normalizers of ``scope`` (urlnormalizer.scope.<scope>) in its order (urlnormalizer.order.<scope>,
        else urlnormalizer.order), built from the configuration."""
        from nutch2.plugin import Plugins

        order = f"urlnormalizer.order.{scope}" if _scoped(conf, "urlnormalizer.order", scope) else None
        only = f"urlnormalizer.scope.{scope}" if _scoped(conf, "urlnormalizer.scope", scope) else None
        return cls(Plugins(conf).build("url-normalizer", order, only), scope, conf.get_int("urlnormalizer.loop.count"))

    def normalize(self, url: str, scope: str | None = None) -> str | None:
        """Normalised ``url``, or None when a normalizer drops it (``scope`` overrides this chain's)."""
        scope = scope or self.scope
        tid, outer = hangs.current()
        try:
            for _ in range(self.loop_count):
                before = url
                for normalizer in self.normalizers:
                    _calls[tid] = (_SITE, normalizer, url, None)  # for hangs: the call a stuck thread is in
                    try:
                        normalized = normalizer.normalize(url, scope)
                    except Exception as e:  # noqa: BLE001 - a plugin's bug drops the URL, as in Nutch, named once
                        plugin_failed("url normalizer", normalizer, url, e)
                        return None
                    if normalized is None:
                        return None
                    url = normalized
                if url == before:
                    break
            return url
        finally:
            hangs.leave(tid, outer)  # back to the call it was in (a site that called it), if any

    def names(self) -> list[str]:
        """The plugin ids of the chain, in order."""
        return [getattr(n, "plugin_id", "") or type(n).__name__ for n in self.normalizers]

    def explain(self, url: str, scope: str | None = None,
                only: str | None = None) -> list[tuple[str, str | None, str | None]]:
        """Each normalizer (only the plugin `only`, if given) with what it made of the URL (None: it dropped it)
        and what decided (its explain(), or None), as normalizerchecker prints it; a further loop
        (urlnormalizer.loop.count) repeats the normalizers."""
        scope = scope or self.scope
        steps: list[tuple[str, str | None, str | None]] = []
        chain = [n for n in self.normalizers if only is None or getattr(n, "plugin_id", None) == only]
        for _ in range(self.loop_count):
            before = url
            for normalizer in chain:
                name = getattr(normalizer, "plugin_id", "") or type(normalizer).__name__
                try:
                    why = normalizer.explain(url, scope) if hasattr(normalizer, "explain") else None
                    normalized = normalizer.normalize(url, scope)
                except Exception as e:  # noqa: BLE001 - the checker names the plugin's bug as what dropped the URL
                    why, normalized = f"raised {type(e).__name__}: {e} ({fix_hint(name)})", None
                steps.append((name, normalized, why))
                if normalized is None:
                    return steps
                url = normalized
            if url == before:
                break
        return steps

    def close(self) -> None:
        for normalizer in self.normalizers:
            close = getattr(normalizer, "close", None)
            if close is not None:
                close()


def _scoped(conf: Configuration, name: str, scope: str) -> str:
    """The value of ``<name>.<scope>`` ("" when it is not a property: a scope without per-scope properties)."""
    try:
        return conf.get_str(f"{name}.{scope}").strip()
    except KeyError:
        return ""


_SITE = hangs.Site("url normalizer", fix_hint)
_calls = hangs.calls
