"""The time limits' clock: time.monotonic() without the time this process was stopped (SIGSTOP, Ctrl-Z then `fg`).

A request's time limits (the total deadline of 3 x http.timeout, fetcher.timelimit.mins)
measure how slow a server is, and a plugin's (parser.timeout, indexingfilter.timeout: nutch2/mapred/timebox.py)
how slow the plugin is, not how long the crawler was stopped: CLOCK_MONOTONIC goes on while a process is
stopped, so a page being read when the fetch was stopped for longer than its limit was cut, as if its server had
been too slow, the moment the fetch went on. Linux keeps no count of the time a process spent stopped, so a
ticker thread of this process reads the monotonic clock every `_TICK` seconds: a gap between two ticks longer than
`_MAX_GAP` is a time the process did not run, and only `_MAX_GAP` of it is counted. `now()` never runs ahead of
the last tick by more than `_MAX_GAP` either, so a thread that runs before the ticker after a stop sees no jump.

This weakens no limit against a slow server (slowloris): while the process runs, the ticker ticks and `now()`
follows the monotonic clock. A ticker held from running for over `_MAX_GAP` while the process runs (a machine so
loaded that a thread waits a second for its turn) loses the excess: a limit may then end a little late, never
early.

Every deadline of the fetch path and of timebox is in this clock's terms; `to_monotonic` turns one into
time.monotonic()'s for code that waits on real time (a politeness slot).
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["now", "to_monotonic"]

_TICK = 0.1  # seconds between two ticks
_MAX_GAP = 1.0  # seconds: a longer gap between ticks is time the process was stopped (counted up to this)

_state = (time.monotonic(), 0.0)  # (last tick, seconds not counted): one tuple, read and replaced at once
_started = [False]
_lock = threading.Lock()


def now() -> float:
    """Seconds, as time.monotonic(), less the time this process was stopped."""
    if not _started[0]:
        _start()
    last, paused = _state
    return min(time.monotonic(), last + _MAX_GAP) - paused


def to_monotonic(t: float) -> float:
    """`t` (this clock's) as a time.monotonic() value, at the rate the two clocks go now."""
    return t + (time.monotonic() - now())


def _tick() -> None:
    global _state
    last, paused = _state
    m = time.monotonic()
    _state = (m, paused + max(0.0, m - last - _MAX_GAP))


def _run() -> None:
    while True:
        time.sleep(_TICK)
        _tick()


def _start() -> None:
    with _lock:
        global _state
        if _started[0]:
            return
        _state = (time.monotonic(), _state[1])  # the time before the first use is nobody's
        threading.Thread(target=_run, name="nutch2-fetch-clock", daemon=True).start()
        _started[0] = True


def _after_fork() -> None:
    """A forked child starts its own ticker, from the fork on."""
    global _state
    _state = (time.monotonic(), _state[1])
    _started[0] = False


os.register_at_fork(after_in_child=_after_fork)
