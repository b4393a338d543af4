"""What a parser gives (Nutch's Parse and ParseStatus) and how a parse is bounded in time: a parse runs in this
thread's parser worker (nutch2/mapred/timebox.py) and is given up on past parser.timeout; the work is told to stop
through its Canceller (checked while walking the tree) and ends at its next check, while a parse stuck inside
libxml2 itself lingers in its abandoned thread until libxml2 returns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nutch2.mapred import timebox
from nutch2.status import ParseMajor, ParseMinor

CANCEL_CHECK_EVERY = 2048  # tree nodes walked between two looks at the cancel flag


class ParseTimeout(Exception):
    """Raised inside a parse thread when its caller gave up waiting."""


@dataclass
class ParseResult:
    """Outcome of parsing one page (Nutch's Parse + ParseStatus)."""

    title: str = ""
    text: str = ""
    outlinks: list[tuple[str, str]] = field(default_factory=list)
    status_major: int = int(ParseMajor.SUCCESS)
    status_minor: int = int(ParseMinor.OK)
    status_args: list[str] = field(default_factory=list)
    encoding: str | None = None
    noindex: bool = False
    nofollow: bool = False
    refresh_url: str | None = None
    refresh_delay: int | None = None
    base_url: str = ""
    nocache: bool = False  # robots noarchive/nocache or Pragma: no-cache: do not show a cached copy
    meta: dict[str, str] = field(default_factory=dict)  # <meta name=... content=...>, name lower-cased
    parser: str = ""  # the parser id that gave this result (parse-html, parse-tika, ...; nutch2/parsers)
    content_type: str | None = None  # the document's own MIME type when its parser found it (Tika's detection)
    retryable: bool = False  # a failure of the parser's server, not of the document: parse the row again later
    counter: str | None = None  # the counter a failure of this kind adds to (e.g. tika_unavailable)
    # what the parse filters are given, not stored: the document parsed and (HTML) its DOM
    document: Any = field(default=None, repr=False, compare=False)
    dom: Any = field(default=None, repr=False, compare=False)

    @property
    def is_success(self) -> bool:
        """True when the parse succeeded (plain success or redirect)."""
        return self.status_major == ParseMajor.SUCCESS

    @property
    def is_redirect(self) -> bool:
        """True when the page is a meta-refresh redirect."""
        return self.is_success and self.status_minor == ParseMinor.REDIRECT


def failure(url: str, major: int, minor: int, *args: str, encoding: str | None = None) -> ParseResult:
    """Build a non-success ParseResult."""
    return ParseResult(
        status_major=int(major),
        status_minor=int(minor),
        status_args=list(args),
        encoding=encoding,
        base_url=url,
    )


class Canceller:
    """Cooperative cancellation flag polled by the tree walkers."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._ticks = 0

    def cancel(self) -> None:
        """Ask the parse to stop at its next check."""
        self._event.set()

    def cancelled(self) -> bool:
        """Whether the caller gave up (for parsers whose steps are long: check between them)."""
        return self._event.is_set()

    def check(self) -> None:
        """Raise ParseTimeout every few calls once cancelled."""
        self._ticks += 1
        if self._ticks % CANCEL_CHECK_EVERY == 0 and self._event.is_set():
            raise ParseTimeout("parser timeout")



def run_with_timeout(work: Callable[[Canceller], ParseResult], url: str, timeout: float | None) -> ParseResult:
    """Run work(canceller) in this thread's parser worker (nutch2/mapred/timebox.py); FAILED/EXCEPTION ["parser
    timeout"] if it overruns: the canceller tells it to stop at its next check, and stuck C code lingers in its
    abandoned thread until it returns. timeout None runs inline. Exceptions become FAILED/EXCEPTION with the
    exception text."""
    cancel = Canceller()
    try:
        return timebox.run(lambda: guarded(work, cancel, url), timeout, "nutch2-parse")
    except timebox.Overrun:
        cancel.cancel()
        return failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, "parser timeout")


def guarded(work: Callable[[Canceller], ParseResult], cancel: Canceller, url: str) -> ParseResult:
    """Run work, turning any exception into a FAILED/EXCEPTION result."""
    try:
        return work(cancel)
    except ParseTimeout:
        return failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, "parser timeout")
    except Exception as exc:  # one bad page must not kill the job (RecursionError included)
        return failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"{type(exc).__name__}: {exc}")
