"""urlnormalizer-pass, as Nutch's PassURLNormalizer: the URL unchanged, in every scope. Name it alone in
urlnormalizer.scope.<scope> for a scope whose URLs must stay as they are."""

from __future__ import annotations

from nutch2.urls.normalizers import URLNormalizer


class PassURLNormalizer(URLNormalizer):
    nutch_class = "org.apache.nutch.net.urlnormalizer.pass.PassURLNormalizer"

    def normalize(self, url: str, scope: str) -> str | None:
        return url
