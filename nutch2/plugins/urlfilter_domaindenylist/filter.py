"""urlfilter-domaindenylist, as Nutch's DomainDenylistURLFilter (formerly domainblacklist): a URL is dropped when
its public suffix, its registered domain or its host is an entry of the list; every other URL passes. The list is
urlfilter.domaindenylist.rules when set, else the file urlfilter.domaindenylist.file (shipped empty)."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.urls.domainlist import DomainList
from nutch2.urls.filters import URLFilter


class DomainDenylistURLFilter(URLFilter):
    nutch_class = "org.apache.nutch.urlfilter.domaindenylist.DomainDenylistURLFilter"

    def __init__(self, conf: Configuration, domains: DomainList | None = None) -> None:
        super().__init__(conf)
        self.domains = domains if domains is not None else DomainList.from_conf(
            conf, "urlfilter.domaindenylist.file", "urlfilter.domaindenylist.rules")

    def filter(self, url: str) -> str | None:
        return None if self.domains.match(url) else url

    def explain(self, url: str) -> str | None:
        listed = self.domains.match(url)
        return f"{self.domains.source}: denies the {listed}" if listed else None
