"""A stop request for the work running in this process (SIGINT/SIGTERM on a terminal, or the job API's stop).

One flag per process: the first request asks every task to finish what it holds and start nothing new (the
fetcher stops taking URLs, map and reduce tasks stop between records); the tool that runs the job then exits
130 naming the command that resumes. Work that stopped this way is exactly like a kill: every job can be run
again to the same result, it only ends sooner and writes what it finished.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from nutch2.errors import NutchError

_requested = threading.Event()
_hooks: list[Callable[[], None]] = []
_in_flight: list[Callable[[], int | None]] = []
_lock = threading.Lock()


class Stopped(NutchError):
    """Raised where a task notices a stop request; the command exits 130."""

    def __init__(self, message: str = "stopped on request") -> None:
        super().__init__(message)

    def __reduce__(self):  # crosses process boundaries (worker -> driver) as it is
        return (Stopped, (str(self),))


def request() -> None:
    """Ask the running work to stop; runs the registered hooks once (e.g. forward to worker processes)."""
    if _requested.is_set():
        return
    _requested.set()
    with _lock:
        hooks = list(_hooks)
    for hook in hooks:
        hook()


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    """Raise Stopped when a stop was requested (called between records)."""
    if _requested.is_set():
        raise Stopped()


def reset() -> None:
    """Clear the request (a new command, or the job API's next job, starts)."""
    _requested.clear()


def on_request(hook: Callable[[], None]) -> Callable[[], None]:
    """Run `hook` when a stop is requested (at once if one already was); returns a function that removes it."""
    with _lock:
        _hooks.append(hook)
    if _requested.is_set():
        hook()

    def remove() -> None:
        with _lock:
            if hook in _hooks:
                _hooks.remove(hook)

    return remove


def count_in_flight(counter: Callable[[], int | None]) -> Callable[[], None]:
    """Register a count of requests in flight (a fetcher's active threads; None: no fetcher runs there, e.g.
    in the worker processes of a parse); returns its remover."""
    with _lock:
        _in_flight.append(counter)

    def remove() -> None:
        with _lock:
            if counter in _in_flight:
                _in_flight.remove(counter)

    return remove


def in_flight() -> int | None:
    """Requests in flight in this process (and its worker processes), or None when no fetcher runs."""
    with _lock:
        counters = list(_in_flight)
    counts = [n for n in (c() for c in counters) if n is not None]
    return sum(counts) if counts else None
