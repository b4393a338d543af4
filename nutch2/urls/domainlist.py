"""Lists of domain suffixes, domain names and host names (Nutch's domain-urlfilter.txt format), and the URLs they
match: a URL matches when its public suffix, its registered domain or its host is listed, as Nutch's urlfilter-domain
and urlfilter-domaindenylist check it (only those three: ``b.example.org`` does not match ``a.b.example.org``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.urls.domains import domain_of_host, domain_suffix_of_host, host_of


@dataclass(frozen=True)
class DomainList:
    """The entries of a list (lower case) and where they were read from (for messages)."""

    entries: frozenset[str]
    source: str

    @classmethod
    def from_lines(cls, lines: Iterable[str], source: str = "<string>") -> DomainList:
        """One entry per line, trimmed and lower-cased; blank lines and lines starting with ``#`` are skipped."""
        if isinstance(lines, str):
            lines = lines.splitlines()
        return cls(frozenset(line.strip().lower() for line in lines if line.strip() and not line.startswith("#")),
                   source)

    @classmethod
    def from_conf(cls, conf: Configuration, file_property: str, rules_property: str) -> DomainList:
        """The list given inline by ``rules_property`` when it is set, else read from the file ``file_property``
        names (conf dir first, then the shipped conf/), as Nutch's precedence; ConfigError when it cannot be read."""
        rules = conf.get_str(rules_property)
        if rules.strip():
            return cls.from_lines(rules, rules_property)
        path = conf.resource(conf.get_str(file_property))
        try:
            with open(path, encoding="utf-8-sig") as handle:  # a BOM (Notepad writes one) is no rule
                return cls.from_lines(handle, str(path))
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
            raise ConfigError(f"cannot read {path}: {reason}; check {file_property} (or give the list inline "
                              f"in {rules_property})") from None

    def __len__(self) -> int:
        return len(self.entries)

    def match(self, url: str) -> str | None:
        """What of ``url`` is listed (``"suffix com"``, ``"domain apache.org"``, ``"host www.yahoo.com"``), or None."""
        host = host_of(url)
        if not host:
            return None
        for kind, name in (("suffix", domain_suffix_of_host(host)), ("domain", domain_of_host(host)),
                           ("host", host)):
            if name and name in self.entries:
                return f"{kind} {name}"
        return None

    def describe(self, url: str) -> str:
        """The names of ``url`` a list is asked about (for a URL no entry matches)."""
        host = host_of(url)
        if not host:
            return "the URL has no host"
        suffix = domain_suffix_of_host(host)
        return f"host {host}, domain {domain_of_host(host)}" + (f", suffix {suffix}" if suffix else "")
