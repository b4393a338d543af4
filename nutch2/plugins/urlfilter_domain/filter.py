"""urlfilter-domain, as Nutch's DomainURLFilter: a URL passes when its public suffix (``com``), its registered
domain (``apache.org``) or its host (``www.apache.org``) is an entry of the list; every other URL is dropped. An
empty list (the shipped domain-urlfilter.txt) keeps every URL (NUTCH-2189). The list is urlfilter.domain.rules when
set, else the file urlfilter.domain.file; unlike Nutch, a file that cannot be read stops the command."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.urls.domainlist import DomainList
from nutch2.urls.filters import URLFilter


class DomainURLFilter(URLFilter):
    nutch_class = "org.apache.nutch.urlfilter.domain.DomainURLFilter"

    def __init__(self, conf: Configuration, domains: DomainList | None = None) -> None:
        super().__init__(conf)
        self.domains = domains if domains is not None else DomainList.from_conf(
            conf, "urlfilter.domain.file", "urlfilter.domain.rules")

    def filter(self, url: str) -> str | None:
        if not self.domains.entries or self.domains.match(url):
            return url
        return None

    def explain(self, url: str) -> str | None:
        if not self.domains.entries:
            return f"{self.domains.source}: empty list, every URL passes"
        listed = self.domains.match(url)
        if listed:
            return f"{self.domains.source}: lists the {listed}"
        return f"{self.domains.source}: lists none of {self.domains.describe(url)}"
