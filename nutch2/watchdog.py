"""A total deadline for each HTTP request: one watchdog thread shuts the request's socket down when it passes.

``requests``/``urllib3`` time out per socket operation only, so a server that sends one byte every half second
holds a request for as long as it likes. Here a request is *armed* with a deadline (:meth:`Watchdog.arm`) for as
long as it runs; the connection classes of :class:`DeadlineAdapter` hand every socket the request opens or reuses
to the armed :class:`Guard` of the calling thread, and the one watchdog thread of the process calls
``shutdown()`` on it at the deadline: the blocked read returns at once (connect is bounded by its own timeout,
which the caller keeps below the time left). One thread and one heap entry per request, no thread per request.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["DeadlineAdapter", "Guard", "WATCHDOG", "Watchdog"]

_GRANULARITY = 0.05  # seconds: deadlines are kept to within this; bounds the watchdog's wake-ups
_MAX_SLEEP = 60.0  # seconds: a far deadline is looked at again (a wait too long for the platform fails)
_COMPACT_AFTER = 4096  # finished requests left in the heap before it is rebuilt without them


class Guard:
    """The deadline of one request and the sockets it uses; ``expired`` once the watchdog cut them."""

    __slots__ = ("deadline", "expired", "done", "socks")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = False
        self.done = False
        self.socks: list[socket.socket] = []


def _shutdown(sock: socket.socket) -> None:
    """Shut the socket down under whoever reads it (the base class call: TLS sockets are cut the same way)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class Watchdog:
    """One daemon thread that cuts the sockets of requests whose deadline passed."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Guard]] = []
        self._finished = 0  # entries of the heap whose request is over (popped at their deadline, or compacted)
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._local = threading.local()

    def arm(self, deadline: float) -> Guard:
        """Start watching a request of this thread; sockets it uses until :meth:`disarm` are cut at ``deadline``."""
        guard = Guard(deadline)
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="nutch2-watchdog", daemon=True)
                self._thread.start()
            if self._finished > _COMPACT_AFTER and 2 * self._finished > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].done]
                heapq.heapify(self._heap)
                self._finished = 0
            if not self._heap or deadline < self._heap[0][0]:
                self._cond.notify()
            heapq.heappush(self._heap, (deadline, next(self._seq), guard))
        self._local.guard = guard
        return guard

    def disarm(self, guard: Guard) -> None:
        """The request is over: its sockets are never cut after this returns."""
        self._local.guard = None
        with self._cond:
            guard.done = True
            guard.socks.clear()
            if not guard.expired:  # still in the heap (an expired one was popped when it fired)
                self._finished += 1

    def attach(self, sock: socket.socket) -> None:
        """A socket the current thread's armed request uses (cut at once when the deadline already passed)."""
        guard: Guard | None = getattr(self._local, "guard", None)
        if guard is None:
            return
        with self._cond:
            if guard.done:
                return
            guard.socks.append(sock)
            if guard.expired:
                _shutdown(sock)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    guard = heapq.heappop(self._heap)[2]
                    if guard.done:
                        self._finished -= 1
                    else:
                        guard.expired = True
                        for sock in guard.socks:
                            _shutdown(sock)
                timeout = min(max(self._heap[0][0] - now, _GRANULARITY), _MAX_SLEEP) if self._heap else None
                self._cond.wait(timeout)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset)  # a forked worker starts its own thread; no inherited lock


class _Guarded:
    """Mixed into urllib3's connections: hands each socket they open, and the one they reuse for a request, to
    the watchdog (an HTTPS socket is attached before its TLS handshake)."""

    sock: socket.socket | None

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        WATCHDOG.attach(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:
            WATCHDOG.attach(self.sock)
        super().request(*args, **kwargs)  # type: ignore[misc]


class _GuardedHTTPConnection(_Guarded, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_Guarded, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections report their sockets to :data:`WATCHDOG`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}
