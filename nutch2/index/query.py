"""What typed words are matched against, for Solr and OpenSearch alike: the fields with their weights (Solr's
edismax qf and pf, OpenSearch's multi_match), the fields a query may name (`title:word`), and typed text read as
clauses — words, "phrases", -negations, field:word and OR — never as a query parser's syntax."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

# words in the title count most, then anchor text, then the body; `text` is the catch-all (url included)
QUERY_FIELDS: dict[str, float] = {"title": 8, "anchor": 4, "content": 1, "text": 0.5}
# pages where the words stand as the exact phrase rank above those where they are apart
PHRASE_FIELDS: dict[str, float] = {"title": 20, "anchor": 8, "content": 4}
# the fields a query may name; anything else before a ':' is a word
USER_FIELDS = ("title", "content", "anchor", "text", "url", "type", "lang")

MAIN_CONTENT = "main_content"  # parse-boilerplate's field: a page's article without its menus, ads and footer
SNIPPET_FIELDS = (MAIN_CONTENT, "content")  # where a hit's snippet comes from, the first that has one

_TOKEN = re.compile(r'(-?)(?:([A-Za-z_][\w.]*):)?("[^"]*"|\S+)')
OPERATORS = ("AND", "&&", "OR", "||", "NOT")


def snippet_of(highlights: Mapping[str, list[str]]) -> str:
    """A hit's snippet from the highlighter's fragments per field (Solr's and OpenSearch's, `<em>` around matches):
    the main content's (parse-boilerplate) when it shows a matched word, so that no menu, ad or footer shows, else the
    full text's when that does, else the first summary there is."""
    fragments = [highlights[f][0] for f in SNIPPET_FIELDS if highlights.get(f)]
    return next((f for f in fragments if "<em>" in f), fragments[0] if fragments else "")


def weighted(fields: dict[str, float]) -> list[str]:
    """["title^8", "anchor^4", ...]: Solr's qf/pf words and OpenSearch's multi_match fields."""
    return [f"{name}^{weight:g}" for name, weight in fields.items()]


@dataclass(frozen=True)
class Clause:
    """One typed word or phrase: its text, the field it names (None: the query fields), and how it counts."""

    text: str
    field: str | None = None
    phrase: bool = False
    negated: bool = False

    @property
    def plain(self) -> bool:
        """A word that must match in any query field: these share one query (and the phrase boost)."""
        return not (self.field or self.phrase or self.negated)


def clauses(text: str) -> list[list[Clause]]:
    """Typed text as groups of clauses: every group must match, and a group is one clause or several joined by OR
    (any of them). `NOT x` is `-x`; `AND` and a leading `+` change nothing (every word must match anyway); an
    operator with nothing to join is a word; backslash escapes are dropped. Nothing typed becomes a wildcard, regex,
    fuzzy or range: `*`, `?`, `~`, `/` are characters, which the analyzers drop."""
    tokens = [m.groups() for m in _TOKEN.finditer(text)]
    groups: list[list[Clause]] = []
    joining = negate = False
    for i, (sign, field, value) in enumerate(tokens):
        operator = not sign and not field and value in OPERATORS and i + 1 < len(tokens)
        if operator and value in ("AND", "&&", "OR", "||") and groups:
            joining = value in ("OR", "||")
            continue
        if operator and value == "NOT":
            negate = True
            continue
        if field and field not in USER_FIELDS:
            value, field = f"{field}:{value}", None
        phrase = len(value) >= 2 and value.startswith('"') and value.endswith('"')
        value = re.sub(r"\\(.)", r"\1", value[1:-1] if phrase else value.lstrip("+") or value)
        clause = Clause(value, field, phrase, bool(sign) or negate)
        negate = False
        if joining:
            groups[-1].append(clause)
            joining = False
        else:
            groups.append([clause])
    return groups
