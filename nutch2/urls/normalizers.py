"""The URL normalizer chain (Nutch's URLNormalizers): the active url-normalizer plugins in `urlnormalizer.order`,
applied in turn for a scope; a normalizer that gives None drops the URL."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nutch2.config import Configuration

# Scopes Nutch passes to its normalizers (a normalizer may treat them differently)
SCOPE_DEFAULT = "default"
SCOPES = frozenset({"default", "inject", "generate_host_count", "partition", "fetcher", "outlink", "indexer"})


class URLNormalizers:
    """The normalizers of one scope, in order."""

    def __init__(self, normalizers: Iterable[Any] = (), scope: str = SCOPE_DEFAULT) -> None:
        self.normalizers = list(normalizers)
        self.scope = scope

    @classmethod
    def from_conf(cls, conf: Configuration, scope: str = SCOPE_DEFAULT) -> URLNormalizers:
        from nutch2.plugins import Plugins

        return cls(Plugins(conf).build("url-normalizer"), scope)

    def normalize(self, url: str, scope: str | None = None) -> str | None:
        """Normalised ``url``, or None when a normalizer drops it (``scope`` overrides this chain's)."""
        scope = scope or self.scope
        for normalizer in self.normalizers:
            normalized = normalizer.normalize(url, scope)
            if normalized is None:
                return None
            url = normalized
        return url

    def explain(self, url: str, scope: str | None = None) -> list[tuple[str, str | None]]:
        """Each normalizer with what it made of the URL (None: it dropped it), as normalizerchecker prints it."""
        scope = scope or self.scope
        steps: list[tuple[str, str | None]] = []
        for normalizer in self.normalizers:
            normalized = normalizer.normalize(url, scope)
            steps.append((getattr(normalizer, "plugin_id", "") or type(normalizer).__name__, normalized))
            if normalized is None:
                break
            url = normalized
        return steps

    def close(self) -> None:
        for normalizer in self.normalizers:
            close = getattr(normalizer, "close", None)
            if close is not None:
                close()
