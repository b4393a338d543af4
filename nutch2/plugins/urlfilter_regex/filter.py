"""urlfilter-regex: Nutch's regex URL filter (regex-urlfilter.txt).

Rule file format: one rule a line, ``+`` (accept) or ``-`` (reject) followed by a Python regex that is
searched for anywhere in the URL (like Java's ``Matcher.find()``). The first rule that matches decides;
a URL no rule matches is rejected. Blank lines and lines starting with ``#`` are ignored.

Host-specific blocks (NUTCH-1838): the rules between a line ``> www.example.org`` and a line ``<`` apply only to
URLs whose host or registered domain is the one named; other URLs skip them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.urls.domains import domain_of_host, host_of
from nutch2.urls.filters import URLFilter


@dataclass(frozen=True)
class Rule:
    """One line of a rule file: accept or reject URLs the pattern finds a match in."""

    accept: bool
    pattern: re.Pattern[str]
    where: str
    host: str | None = None  # host or domain the rule is limited to (a "> host" block), None for every URL

    def __post_init__(self) -> None:
        object.__setattr__(self, "_search", finder(self.pattern))

    def matches(self, url: str) -> bool:
        """True when the pattern occurs anywhere in ``url``."""
        return self._search(url) is not None  # type: ignore[attr-defined]


_LEADING_ANY = re.compile(r"^(\(\?[aiLmsux]+\))?\.\*\??(?![*+?{])")


def finder(pattern: re.Pattern[str]) -> Callable[[str], re.Match[str] | None]:
    """The pattern's search, without a leading ``.*``: whether a match occurs anywhere is the same, and the search
    no longer tries every end of ``.*`` at every start (Nutch's loop rule ``.*(/[^/]+)/[^/]+\1/[^/]+\1/`` costs
    ~20x more per URL with it)."""
    bare = _LEADING_ANY.sub(lambda m: m.group(1) or "", pattern.pattern, count=1)
    if bare == pattern.pattern:
        return pattern.search
    try:
        return re.compile(bare, pattern.flags).search
    except re.error:
        return pattern.search


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
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # "possible nested set" etc.: a Java class re reads
            pattern = re.compile(regex)  # otherwise ([a-z&&[^x]], [[:alpha:]]), said as two lines of a warning
    except re.error as err:
        raise ValueError(f"{where}: bad regex {regex!r}: {err}") from None
    except FutureWarning as err:
        raise ValueError(f"{where}: bad regex {regex!r}: {str(err).lower()}: in a class, Python's re reads '[[' "
                         "and '&&' as characters where Java reads a nested class or an intersection (and may read "
                         r"'--', '||', '~~' otherwise one day); escape the second character (\[, \&, \-, \|, \~) "
                         "or write the class out") from None
    return Rule(accept=sign == "+", pattern=pattern, where=where, host=host)


class RegexURLFilter(URLFilter):
    """Nutch's urlfilter-regex: the first matching rule accepts or rejects; no match rejects."""

    nutch_class = "org.apache.nutch.urlfilter.regex.RegexURLFilter"

    def __init__(self, conf: Configuration | None = None, rules: Sequence[Rule] | None = None,
                 source: str = "<string>") -> None:
        inline = conf.get_str("urlfilter.regex.rules") if rules is None and conf is not None else ""
        if inline.strip():  # Nutch's urlfilter.regex.rules: the rules themselves, the file is not read
            try:
                rules, source = _read_rules(inline.splitlines(), "urlfilter.regex.rules"), "urlfilter.regex.rules"
            except ValueError as e:
                raise ConfigError(f"{e}; fix the rule in urlfilter.regex.rules") from None
        if rules is None:  # built by the plugin system: the rules of urlfilter.regex.file
            assert conf is not None
            path = conf.resource(conf.get_str("urlfilter.regex.file"))
            try:
                with open(path, encoding="utf-8-sig") as handle:  # a BOM (Notepad writes one) is no rule
                    rules, source = _read_rules(handle, str(path)), str(path)
            except OSError as e:
                raise ConfigError(f"cannot read URL filter file {path}: {e.strerror}; check urlfilter.regex.file") \
                    from None
            except UnicodeDecodeError:
                raise ConfigError(f"cannot read URL filter file {path}: not UTF-8 text; save it as UTF-8") from None
            except ValueError as e:
                raise ConfigError(f"{e}; fix the rule in the URL filter file") from None
        self.conf = conf  # type: ignore[assignment]
        self.rules = list(rules)
        self.source = source
        self.has_host_rules = any(rule.host is not None for rule in self.rules)

    @classmethod
    def from_lines(cls, lines: Iterable[str], source: str = "<string>") -> RegexURLFilter:
        """Build a filter from rule lines; ``source`` names them in error messages."""
        return cls(None, _read_rules(lines, source), source)

    @classmethod
    def from_file(cls, path: str | Path) -> RegexURLFilter:
        """Build a filter from a regex-urlfilter.txt file (UTF-8)."""
        with open(path, encoding="utf-8-sig") as handle:  # a BOM (Notepad writes one) is no rule
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

    def describe(self) -> str:
        """What filterchecker -listFilters shows: the file and how many rules it has."""
        return f"{self.source} ({len(self.rules)} rules)"

    def explain(self, url: str) -> str | None:
        rule = self.rule_for(url)
        if rule is None:
            return f"{self.source}: no rule matches"
        return f"{rule.where}: {'+' if rule.accept else '-'}{rule.pattern.pattern}"


def _read_rules(lines: Iterable[str], source: str) -> list[Rule]:
    """Rules of a rule file's lines, with the host blocks of NUTCH-1838."""
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
    return rules
