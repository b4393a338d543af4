"""URL filters: Nutch's regex URL filter (regex-urlfilter.txt) and a chain of filters.

Rule file format: one rule a line, ``+`` (accept) or ``-`` (reject) followed by a Python regex that is
searched for anywhere in the URL (like Java's ``Matcher.find()``). The first rule that matches decides;
a URL no rule matches is rejected. Blank lines and lines starting with ``#`` are ignored.

Host-specific blocks (NUTCH-1838): the rules between a line ``> www.example.org`` and a line ``<`` apply only to
URLs whose host or registered domain is the one named; other URLs skip them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from nutch2.urls.domains import domain_of_host, host_of

DEFAULT_MAX_LENGTH = 2048


class URLFilter(Protocol):
    """Anything that filters URLs: returns the URL to keep it, None to drop it."""

    def filter(self, url: str) -> str | None: ...


@dataclass(frozen=True)
class Rule:
    """One line of a rule file: accept or reject URLs the pattern finds a match in."""

    accept: bool
    pattern: re.Pattern[str]
    where: str
    host: str | None = None  # host or domain the rule is limited to (a "> host" block), None for every URL

    def matches(self, url: str) -> bool:
        """True when the pattern occurs anywhere in ``url``."""
        return self.pattern.search(url) is not None


def parse_rule(line: str, where: str, host: str | None = None) -> Rule | None:
    """Parse one rule line; None for blank and comment lines, ValueError naming ``where`` otherwise."""
    line = line.rstrip("\r\n")
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    sign, regex = line[0], line[1:]
    if sign not in "+-":
        raise ValueError(f"{where}: a rule must start with '+' or '-', got {line!r}")
    if not regex:
        raise ValueError(f"{where}: missing regex after {sign!r}")
    try:
        pattern = re.compile(regex)
    except re.error as err:
        raise ValueError(f"{where}: bad regex {regex!r}: {err}") from None
    return Rule(accept=sign == "+", pattern=pattern, where=where, host=host)


class RegexURLFilter:
    """Nutch's urlfilter-regex: the first matching rule accepts or rejects; no match rejects."""

    def __init__(self, rules: Sequence[Rule], source: str = "<string>") -> None:
        self.rules = list(rules)
        self.source = source
        self.has_host_rules = any(rule.host is not None for rule in self.rules)

    @classmethod
    def from_lines(cls, lines: Iterable[str], source: str = "<string>") -> RegexURLFilter:
        """Build a filter from rule lines; ``source`` names them in error messages."""
        if isinstance(lines, str):
            lines = lines.splitlines()
        rules = []
        host: str | None = None
        for number, line in enumerate(lines, start=1):
            where = f"{source}:{number}"
            if line.startswith(">"):
                host = line[1:].strip().lower()
                if not host:
                    raise ValueError(f"{where}: '>' must be followed by a host or domain name")
                continue
            if line.startswith("<"):
                host = None
                continue
            rule = parse_rule(line, where, host)
            if rule is not None:
                rules.append(rule)
        return cls(rules, source)

    @classmethod
    def from_file(cls, path: str | Path) -> RegexURLFilter:
        """Build a filter from a regex-urlfilter.txt file (UTF-8)."""
        with open(path, encoding="utf-8") as handle:
            return cls.from_lines(handle, source=str(path))

    def rule_for(self, url: str) -> Rule | None:
        """The first rule matching ``url`` (host-specific rules only for their host or domain), or None."""
        if not self.has_host_rules:
            return next((rule for rule in self.rules if rule.matches(url)), None)

        host = host_of(url)
        names = {host, domain_of_host(host)}
        return next((rule for rule in self.rules if (rule.host is None or rule.host in names) and rule.matches(url)),
                    None)

    def filter(self, url: str) -> str | None:
        """``url`` when accepted, None when rejected."""
        rule = self.rule_for(url)
        return url if rule is not None and rule.accept else None


class URLFilters:
    """A chain of URL filters behind a length check (``urlfilter.max.length``); every filter must accept."""

    def __init__(self, filters: Iterable[URLFilter] = (), max_length: int = DEFAULT_MAX_LENGTH) -> None:
        self.filters = list(filters)
        self.max_length = max_length
        # a crawl asks about the same URLs again and again (outlinks of every page of a host, then generate)
        self.filter = lru_cache(maxsize=65536)(self._filter)  # type: ignore[method-assign]

    def __getstate__(self) -> dict:
        """Pickled as its rules (a job ships its filters to worker processes); the cache is made anew."""
        return {"filters": self.filters, "max_length": self.max_length}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["filters"], state["max_length"])  # type: ignore[misc]

    @classmethod
    def from_file(cls, path: str | Path, max_length: int = DEFAULT_MAX_LENGTH) -> URLFilters:
        """A chain with one regex filter read from ``path``."""
        return cls([RegexURLFilter.from_file(path)], max_length)

    def filter(self, url: str) -> str | None:
        """``url`` when every filter accepts it and it is not too long (max_length <= 0: no limit)."""
        return self._filter(url)

    def explain(self, url: str) -> tuple[bool, str]:
        """(kept, what decided) for one URL, as filterchecker prints it."""
        if 0 < self.max_length < len(url):
            return False, f"urlfilter.max.length: longer than {self.max_length} characters"
        decided = "no filter rejects it"
        for url_filter in self.filters:
            if not isinstance(url_filter, RegexURLFilter):
                if url_filter.filter(url) is None:
                    return False, type(url_filter).__name__
                continue
            rule = url_filter.rule_for(url)
            if rule is None:
                return False, f"{url_filter.source}: no rule matches"
            decided = f"{rule.where}: {'+' if rule.accept else '-'}{rule.pattern.pattern}"
            if not rule.accept:
                return False, decided
        return True, decided

    def _filter(self, url: str) -> str | None:
        if 0 < self.max_length < len(url):
            return None
        result: str | None = url
        for url_filter in self.filters:
            result = url_filter.filter(result)
            if result is None:
                return None
        return result
