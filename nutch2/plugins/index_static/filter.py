"""index-static: the indexing filter."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.logs import config_warning
from nutch2.webpage import WebPage

log = logging.getLogger(__name__)

DEFAULT_SEPARATORS = {"fieldsep": ",", "keysep": ":", "valuesep": " "}


@cache
def static_fields(spec: str, fieldsep: str = ",", keysep: str = ":", valuesep: str = " ") -> dict[str, list[str]]:
    """index.static as Nutch reads it: entries split by `fieldsep`, each ``name<keysep>values`` with the values
    split by `valuesep` (separators are literal strings); names and values trimmed, empty ones dropped; a later
    entry for a name replaces an earlier one. An entry that is not one name and its values is left out with one
    warning per process (Nutch leaves it out silently)."""
    fields: dict[str, list[str]] = {}
    for entry in spec.split(fieldsep):
        if not entry.strip():
            continue
        parts = entry.split(keysep)
        values = [v.strip() for v in parts[-1].split(valuesep) if v.strip()]
        if len(parts) != 2 or not parts[0].strip() or not values:
            config_warning(log, f"warning: index.static entry {entry.strip()!r} is not name{keysep}value; ignored "
                           f"(write collection{keysep}docs{fieldsep}source{keysep}web{valuesep}crawl; the separators "
                           "are index.static.fieldsep, index.static.keysep and index.static.valuesep)")
            continue
        fields[parts[0].strip()] = values
    return fields


class StaticFieldIndexer(IndexingFilter):
    """Adds every index.static field to each document (after values the document has: Nutch's doc.add)."""

    nutch_class = "org.apache.nutch.indexer.staticfield.StaticFieldIndexer"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        seps = {name: conf.get_str(f"index.static.{name}") or default  # empty (a stripped XML value): the default
                for name, default in DEFAULT_SEPARATORS.items()}
        self.static = static_fields(conf.get_str("index.static"), **seps)

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        for name, values in self.static.items():
            have = doc.get(name)
            doc[name] = ([] if have is None else have if isinstance(have, list) else [have]) + values
        return doc
