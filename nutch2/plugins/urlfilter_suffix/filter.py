"""urlfilter-suffix, as Nutch's SuffixURLFilter reads suffix-urlfilter.txt.

Each line is trimmed; blank lines and lines starting with ``#`` are skipped. A line starting with ``+`` or ``-`` sets
the mode (the last one wins): ``+`` accepts every URL except those ending with a listed suffix, ``-`` (the default)
accepts only URLs ending with a listed suffix. A mode line containing ``I`` makes matching case-insensitive (URL and
suffixes lower-cased), one containing ``P`` matches the URL's path only (no query, no fragment); both stay on once
set. Every other line is a literal suffix (no wildcards: ``.jpg``, not ``*.jpg``). The rules are
urlfilter.suffix.rules when set, else the file urlfilter.suffix.file; unlike Nutch (which then rejects every URL),
a file that cannot be read stops the command.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.urls.filters import URLFilter


@dataclass(frozen=True)
class SuffixRules:
    """A parsed suffix file: the suffixes and the three switches."""

    suffixes: tuple[str, ...]
    accept_unlisted: bool = False  # "+": listed suffixes are rejected, the rest accepted
    ignore_case: bool = False  # "I"
    path_only: bool = False  # "P"
    source: str = "<string>"

    @classmethod
    def parse(cls, lines: Iterable[str], source: str = "<string>") -> SuffixRules:
        if isinstance(lines, str):
            lines = lines.splitlines()
        suffixes: list[str] = []
        accept = ignore = path = False
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line[0] in "+-":
                accept = line[0] == "+"
                ignore = ignore or "I" in line
                path = path or "P" in line
            else:
                suffixes.append(line)
        if ignore:
            suffixes = [s.lower() for s in suffixes]
        return cls(tuple(dict.fromkeys(suffixes)), accept, ignore, path, source)


class SuffixURLFilter(URLFilter):
    nutch_class = "org.apache.nutch.urlfilter.suffix.SuffixURLFilter"

    def __init__(self, conf: Configuration | None, rules: SuffixRules | None = None) -> None:
        super().__init__(conf)  # type: ignore[arg-type]
        if rules is None:
            assert conf is not None
            rules = _read(conf)
        self.rules = rules
        # shortest first: the suffix named by explain() is the shortest that matches, as Nutch's matcher finds
        self._suffixes = tuple(sorted(rules.suffixes, key=len))

    @classmethod
    def from_text(cls, text: str, source: str = "<string>") -> SuffixURLFilter:
        return cls(None, SuffixRules.parse(text, source))

    def describe(self) -> str:
        """What filterchecker -listFilters shows: where the suffixes come from, how many, and the mode."""
        mode = "rejected" if self.rules.accept_unlisted else "the only ones accepted"
        return f"{self.rules.source} ({len(self.rules.suffixes)} suffixes, {mode})"

    def matched(self, url: str) -> str | None:
        """The shortest listed suffix ``url`` (or its path, in path mode) ends with, or None."""
        subject = url.lower() if self.rules.ignore_case else url
        if self.rules.path_only:
            try:
                subject = urlsplit(subject).path
            except ValueError:
                pass  # not a URL: the whole string, as Nutch does for a URL it cannot parse
        if not subject.endswith(self._suffixes):
            return None
        return next(s for s in self._suffixes if subject.endswith(s))

    def filter(self, url: str) -> str | None:
        listed = self.matched(url) is not None
        return url if listed != self.rules.accept_unlisted else None

    def explain(self, url: str) -> str | None:
        suffix = self.matched(url)
        mode = "+" if self.rules.accept_unlisted else "-"
        if suffix is not None:
            return f"{self.rules.source}: suffix {suffix} ({'rejected' if mode == '+' else 'accepted'} in mode {mode})"
        return f"{self.rules.source}: no listed suffix ({'accepted' if mode == '+' else 'rejected'} in mode {mode})"


def _read(conf: Configuration) -> SuffixRules:
    rules = conf.get_str("urlfilter.suffix.rules")
    if rules.strip():
        return SuffixRules.parse(rules, "urlfilter.suffix.rules")
    path = conf.resource(conf.get_str("urlfilter.suffix.file"))
    try:
        with open(path, encoding="utf-8-sig") as handle:  # a BOM (Notepad writes one) is no rule
            return SuffixRules.parse(handle, str(path))
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise ConfigError(f"cannot read {path}: {reason}; check urlfilter.suffix.file (or give the rules inline "
                          "in urlfilter.suffix.rules)") from None
