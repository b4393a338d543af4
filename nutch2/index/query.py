"""What typed words are matched against, for Solr and OpenSearch alike: the fields with their weights (Solr's
edismax qf and pf, OpenSearch's multi_match), the fields a query may name (`title:word`), and typed text read as
clauses — words, "phrases", -negations, field:word and OR — never as a query parser's syntax."""

from __future__ import annotations

import html
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

SNIPPET_MAX = 300  # characters of a hit's snippet
_EM = re.compile(r"(</?em>)")
_TOKEN = re.compile(r'(-?)(?:([A-Za-z_][\w.]*):)?("[^"]*"|\S+)')
OPERATORS = ("AND", "&&", "OR", "||", "NOT")


def snippet_of(highlights: Mapping[str, list[str]]) -> str:
    """A hit's snippet from the highlighter's fragments per field (Solr's and OpenSearch's, `<em>` around matches):
    the main content's (parse-boilerplate) when it shows a matched word, so that no menu, ad or footer shows, else the
    full text's when that does, else the first summary there is."""
    fragments = [highlights[f][0] for f in SNIPPET_FIELDS if highlights.get(f)]
    return next((f for f in fragments if "<em>" in f), fragments[0] if fragments else "")


def snippet_runs(snippet: str, limit: int = SNIPPET_MAX) -> tuple[list[tuple[str, bool]], bool, bool]:
    """A highlighter's snippet (HTML-encoded text, <em> around matches) as decoded text runs (text, marked), at most
    `limit` characters of them from a little before the first match, and whether text was left out before and after.
    The highlighters cut at sentence ends, and a page without any is one sentence of up to hl.maxAnalyzedChars."""
    runs: list[tuple[str, bool]] = []
    marked = False
    for part in _EM.split(" ".join(snippet.split())):
        if part in ("<em>", "</em>"):
            marked = part == "<em>"
        elif part and runs and runs[-1][1] == marked:  # <em>b <em>c: one mark
            runs[-1] = (runs[-1][0] + html.unescape(part), marked)
        elif part:
            runs.append((html.unescape(part), marked))
    full = "".join(text for text, _ in runs)
    total, start, end = len(full), 0, len(full)
    if total > limit:
        first = 0  # where the first match starts (0 without one)
        for text, is_mark in runs:
            if is_mark:
                break
            first += len(text)
        else:
            first = 0
        start = min(max(0, first - limit // 3), total - limit)
        if start > 0 and (space := full.find(" ", start, start + 30)) >= 0:  # from a word's start
            start = space + 1
        end = start + limit
        if end < total and (space := full.rfind(" ", end - 30, end)) > start:  # to a word's end
            end = space
    out: list[tuple[str, bool]] = []
    at = 0
    for text, is_mark in runs:
        piece = text[max(0, start - at):max(0, end - at)]
        at += len(text)
        if piece:
            out.append((piece, is_mark))
    return out, start > 0, end < total


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
