"""The time limits' clock: time.monotonic() without the time this process was stopped (SIGSTOP, Ctrl-Z then `fg`).

A request's time limits (the total deadline of 3 x http.timeout, fetcher.timelimit.mins, a rendered page's time)
measure how slow a server is, and a plugin's (parser.timeout, indexingfilter.timeout: nutch2/mapred/timebox.py)
how slow the plugin is, not how long the crawler was stopped: CLOCK_MONOTONIC goes on while a process is
stopped, so a page being read when the fetch was stopped for longer than its limit was cut, as if its server had
been too slow, the moment the fetch went on. Linux keeps no count of the time a process spent stopped, so a
ticker thread of this process reads the monotonic clock every `_TICK` seconds and counts the SIGCONTs (the
signal that continues a stopped process: `fg`, `kill -CONT`): blocked in the main thread and the threads it
starts, a SIGCONT stays pending until the ticker takes it (sigtimedwait), and a handler counts one delivered to a
thread started before. A gap between two
ticks longer than `_MAX_GAP` with a SIGCONT in it is a time the process was stopped, and only `_MAX_GAP` of it is
counted. A gap with no SIGCONT is a time the ticker waited for a loaded machine or for the GIL: it is counted
whole, so a limit ends on time under any load. `now()` never runs ahead of the last tick by more than `_MAX_GAP`
while the ticker has not decided, so a thread that runs before it after a stop sees no jump.

The handler is set when this module is first imported in a process's main thread (SIGCONT's default action, to
continue, is kept: a handler cannot change it). Where it cannot be set (imported first in another thread, or the
program has its own SIGCONT handler), every gap is counted: the limits count real time, as without this clock.

Every deadline of the fetch path and of timebox is in this clock's terms; `to_monotonic` turns one into
time.monotonic()'s for code that waits on real time (a politeness slot).
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["now", "to_monotonic"]

_TICK = 0.1  # seconds between two ticks
_MAX_GAP = 1.0  # seconds: a longer gap between ticks with a SIGCONT in it is time the process was stopped
_CONFIRM = 0.5  # seconds the ticker waits, after a long gap, for the SIGCONT handler to run (in the main thread)

_state = (time.monotonic(), 0.0)  # (last tick, seconds not counted): one tuple, read and replaced at once
_continued = [0]  # SIGCONTs this process received (the handler's count)
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


def _tick(continued_before: int, confirm: float = _CONFIRM) -> int:
    """One tick; `continued_before` is the SIGCONT count the previous tick read before its time. Returns this
    tick's (read before its time, so that a stop between the two is still seen at the next tick)."""
    global _state
    continued = _continued[0]
    last, paused = _state
    m = time.monotonic()
    gap = m - last
    if gap > _MAX_GAP:
        waited = 0.0
        while _continued[0] == continued_before and waited < confirm:
            _wait(_TICK / 2)  # a SIGCONT taken here, or the handler run by the main thread
            waited += _TICK / 2
        if _continued[0] != continued_before:
            paused += gap - _MAX_GAP
    _state = (m, paused)
    return continued


def _wait(seconds: float) -> None:
    """Sleep `seconds`; a SIGCONT blocked in this thread (see _watch_sigcont) is taken and counted at once, however
    late the main thread runs."""
    if signal.SIGCONT in signal.pthread_sigmask(signal.SIG_BLOCK, []):
        if signal.sigtimedwait([signal.SIGCONT], seconds) is not None:
            _continued[0] += 1
    else:
        time.sleep(seconds)


def _run() -> None:
    seen = _continued[0]
    while True:
        _wait(_TICK)
        seen = _tick(seen)


def _start() -> None:
    with _lock:
        global _state
        if _started[0]:
            return
        _state = (time.monotonic(), _state[1])  # the time before the first use is nobody's
        threading.Thread(target=_run, name="nutch2-fetch-clock", daemon=True).start()
        _started[0] = True


def _on_sigcont(signum: int, frame: object) -> None:
    _continued[0] += 1


def _watch_sigcont() -> None:
    """Count SIGCONTs, when this is the main thread and no one else handles them."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGCONT) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGCONT, _on_sigcont)
            # blocked here and in the threads started after (the ticker among them), a SIGCONT waits for the
            # ticker to take it: the stop is known without the main thread running (a loaded machine may not run it
            # for seconds). A stopped process is continued whatever its mask.
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCONT])
    except (ValueError, OSError):  # not the main interpreter: every gap is counted
        pass


def _after_fork() -> None:
    """A forked child starts its own ticker, from the fork on."""
    global _state
    _state = (time.monotonic(), _state[1])
    _started[0] = False


_watch_sigcont()
os.register_at_fork(after_in_child=_after_fork)
