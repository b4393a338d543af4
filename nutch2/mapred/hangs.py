"""Which plugin a thread is stuck in, and on which URL: for plugins called too often for a time limit of their own
(URL filters and normalizers, scoring filters, fetch schedules, index writers).

A URL filter or normalizer runs on every outlink, so it is called in the caller's thread (a hand-off to a timed
thread, as `timebox` does for a parser, would cost more than the filter). Python cannot stop a call that never
returns, but it can say where it is: a watched call site puts the call it makes in `calls`, under its thread's id
(one dict store per call, and the entry is taken out when the site returns), and a sampler thread of this process
looks at `calls` once a second. A call seen unchanged for `STUCK_AFTER` seconds is named in one warning line
(plugin, URL, the fix); `lines()` names every such call for the progress line and for the stop line of a command
that does not end.

The sampler reads only `calls`, never another thread's frames: CPython 3.11 can crash reading the locals of a frame
that another thread runs (a worker segfaulted so), and `sys._current_frames()` can deadlock with the collector.

A worker process sends its `lines()` with its reports (nutch2/mapred/workers.py), and the pool is a `source` of
the driver's, so the driver's lines name a plugin stuck in any of its workers.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

STUCK_AFTER = 10.0  # seconds in one call of a plugin before it is named
_PERIOD = 1.0  # seconds between two looks at the calls


class Site:
    """A watched call site: `what` it calls ("url filter") and `hint(plugin name)`, the fix a line about it says."""

    def __init__(self, what: str, hint: Callable[[str], str]) -> None:
        self.what, self.hint = what, hint


Call = tuple[Site, Any, str, "str | None"]  # site, plugin, URL (or document id), method called (None: the site's)

# thread id: the watched call it is in. A site sets it before each plugin call (a new tuple per call: the sampler
# tells calls apart by identity) and puts back what was there when it returns (sites can nest).
calls: dict[int, Call] = {}
_sources: list[Callable[[], list[str]]] = []
_lock = threading.Lock()
_seen: dict[int, tuple[Call, float, bool]] = {}  # thread id: call, since, warned
_started = [0]  # pid of the process whose sampler runs


def current() -> tuple[int, Call | None]:
    """This thread's id and the watched call it is in (None: none), for a site to put back when it returns."""
    tid = threading.get_ident()
    return tid, calls.get(tid)


def leave(tid: int, outer: Call | None) -> None:
    """A watched site of thread `tid` returns: the call it was in before (`outer`, a site that called it) is back."""
    if outer is None:
        calls.pop(tid, None)
    else:
        calls[tid] = outer


def start() -> None:
    """Run the sampler in this process (once; again in a forked child)."""
    with _lock:
        if _started[0] == os.getpid():
            return
        _started[0] = os.getpid()
        _seen.clear()
    threading.Thread(target=_loop, name="plugin-hangs", daemon=True).start()


def add_source(fn: Callable[[], list[str]]) -> Callable[[], None]:
    """`fn()` gives lines of stuck calls elsewhere (a worker pool's processes); returns its remover."""
    with _lock:
        _sources.append(fn)

    def remove() -> None:
        with _lock:
            if fn in _sources:
                _sources.remove(fn)

    return remove


def lines(local_only: bool = False, now: float | None = None) -> list[str]:
    """One line per call stuck for STUCK_AFTER seconds or more, in this process (and its sources')."""
    now = time.monotonic() if now is None else now
    with _lock:
        seen = list(_seen.values())
        sources = [] if local_only else list(_sources)
    stuck: dict[tuple[Any, ...], tuple[float, int, Call]] = {}  # threads stuck on one call: named once
    for call, since, _ in seen:
        if now - since >= STUCK_AFTER:
            key = (call[0], id(call[1]), call[2], call[3])
            age, n = stuck[key][:2] if key in stuck else (0.0, 0)
            stuck[key] = (max(age, now - since), n + 1, call)
    out = [_line(call, age) + (f" ({n} threads)" if n > 1 else "") for age, n, call in stuck.values()]
    for source in sources:
        try:
            out += source()
        except Exception:  # noqa: BLE001 - a source that cannot answer names nothing
            pass
    return out


def summary() -> str:
    """The stuck calls as one clause ("" when none): for a progress line or a stop line."""
    found = lines()
    return "; ".join(found)


def _name(plugin: Any) -> str:
    return getattr(plugin, "plugin_id", "") or type(plugin).__name__


def _line(call: Call, age: float) -> str:
    site, plugin, url, method = call
    name = _name(plugin)
    return (f"{site.what} {name}{f' ({method})' if method else ''} has not returned for {age:.0f} s on {url} "
            f"({site.hint(name)})")


def sample(now: float | None = None) -> None:
    """Look at the calls once (the sampler calls it; tests call it to step time)."""
    now = time.monotonic() if now is None else now
    found = calls.copy()  # one C call under the GIL: the sites go on while it is read
    warn = []
    with _lock:
        for tid, call in found.items():
            old = _seen.get(tid)
            if old is not None and old[0] is call:
                if not old[2] and now - old[1] >= STUCK_AFTER:
                    _seen[tid] = (call, old[1], True)
                    warn.append((call, now - old[1]))
            else:
                _seen[tid] = (call, now, False)
        for tid in [t for t in _seen if t not in found]:
            del _seen[tid]
    for call, age in warn:
        log.warning(f"{_line(call, age)}: its job waits for it; Ctrl-C stops the job, what was written is kept")


def _forked() -> None:
    """In a forked child only the forking thread runs: the calls of the parent's other threads are not here."""
    mine = calls.get(threading.get_ident())
    calls.clear()
    if mine is not None:
        calls[threading.get_ident()] = mine


os.register_at_fork(after_in_child=_forked)


def _loop() -> None:
    pid = os.getpid()
    while _started[0] == pid:
        time.sleep(_PERIOD)
        try:
            sample()
        except Exception:  # noqa: BLE001 - the sampler never ends a job
            log.debug("plugin hang sampler failed", exc_info=True)


__all__ = ["STUCK_AFTER", "Site", "add_source", "calls", "current", "leave", "lines", "sample", "start", "summary"]
