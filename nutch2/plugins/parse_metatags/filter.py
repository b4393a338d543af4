"""parse-metatags: the parse filter."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.parse.parsers import ParseFilter
from nutch2.webpage import WebPage

META_PREFIX = "meta_"


class MetaTagsParser(ParseFilter):
    """Meta tags of metatags.names into page.metadata; values of an earlier parse that this one lacks go."""

    nutch_class = "org.apache.nutch.parse.metatags.MetaTagsParser"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.names = {n.strip().lower() for n in conf.get_str("metatags.names").replace(";", ",").split(",")
                      if n.strip()}

    def filter(self, doc: Any, parse: Any, page: WebPage, dom: Any | None) -> None:
        for key in [k for k in page.metadata if k.startswith(META_PREFIX)]:
            del page.metadata[key]
        for name, value in parse.meta.items():
            if "*" in self.names or name in self.names:
                page.metadata[META_PREFIX + name] = value.encode("utf-8")
