"""The drivers of this process (issue 41): one Cassandra Cluster/Session or HBase Thrift pool per server and
settings, shared by every store opened on it in this process.

A crawl opens its store some hundred times (each task of each job, the crawl tool's short opens for the journal
and the leases), and the worker processes of the processes runner live across jobs: building a driver per open
paid its connects, its handshakes and its prepared statements again each time. A store asks `shared(kind,
settings, make, close)` for its driver and does not close it: drivers live until the process exits (closed then,
atexit). The key holds the process id, so a child forked from a process with a driver opens its own and never
writes on its parent's sockets; a driver found broken is dropped with `discard`.

A process that holds a network driver also lowers the interpreter's switch interval (`storage.switch.interval.ms`):
a request's answer is taken by a thread that must get the GIL back (the Cassandra driver's event loop, a Thrift
socket read), and while other threads compute each such hand-over waits out the whole interval (5 ms by default):
three or four of them a request made a 1 ms write cost 20-30 ms under the fetcher's threads.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any

log = logging.getLogger(__name__)

_lock = threading.Lock()
_drivers: dict[tuple[int, str, Hashable], tuple[Any, Callable[[Any], None]]] = {}


def shared(kind: str, settings: Hashable, make: Callable[[], Any], close: Callable[[Any], None]) -> Any:
    """This process's driver for (kind, settings), made by `make` on first use (a failure is raised, nothing kept)."""
    key = (os.getpid(), kind, settings)
    with _lock:  # one maker at a time: two tasks opening at once share one driver, not two
        found = _drivers.get(key)
        if found is not None:
            return found[0]
        driver = make()
        _drivers[key] = (driver, close)
        log.debug(f"store: new {kind} driver for {settings} (process {key[0]})")
        return driver


def discard(kind: str, settings: Hashable, driver: Any) -> None:
    """Drop (and close) this process's driver for (kind, settings) if it is `driver`: the next open makes a new one."""
    key = (os.getpid(), kind, settings)
    with _lock:
        found = _drivers.get(key)
        if found is None or found[0] is not driver:
            return
        del _drivers[key]
    _close(kind, found)


def switch_interval(ms: float) -> None:
    """Lower the interpreter's switch interval to `ms` (never raise it; 0 leaves it alone)."""
    if ms > 0 and ms / 1000 < sys.getswitchinterval():
        sys.setswitchinterval(ms / 1000)


def close_all() -> None:
    """Close every driver this process made (not those inherited from a parent it was forked from)."""
    pid = os.getpid()
    with _lock:
        mine = [(k, v) for k, v in _drivers.items() if k[0] == pid]
        for k, _ in mine:
            del _drivers[k]
    for k, v in mine:
        _close(k[1], v)


def _close(kind: str, entry: tuple[Any, Callable[[Any], None]]) -> None:
    try:
        entry[1](entry[0])
    except Exception as e:  # closing at exit: a server gone meanwhile is no error
        log.debug(f"store: closing a {kind} driver: {e}")


atexit.register(close_all)
