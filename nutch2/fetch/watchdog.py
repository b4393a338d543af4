"""A total deadline for each HTTP request: one watchdog thread shuts the request's socket down when it passes.

``urllib3`` times out per socket operation only, so a server that sends one byte every half second holds a request
for as long as it likes. Here a request is *armed* with a deadline (:meth:`Watchdog.arm`) for as long as it runs;
the connection classes that :func:`guard` gives a pool manager hand every socket the request opens or reuses
to the armed :class:`Guard` of the calling thread, and the one watchdog thread of the process calls
``shutdown()`` on it at the deadline: the blocked read returns at once (connect is bounded by its own timeout,
which the caller keeps below the time left). One thread per process, no thread per request. HTTP/2 connections
(protocol-http's http2.py) hand their sockets to :meth:`Watchdog.attach` the same way.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time
from typing import Any

from urllib3 import PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.exceptions import TimeoutError as TimeoutErrorU3

from nutch2.fetch.addresses import AddressPolicy
from nutch2.mapred import clock

__all__ = ["Guard", "WATCHDOG", "Watchdog", "guard", "timed_out"]

_GRANULARITY = 0.05  # seconds: deadlines are kept to within this; the watchdog looks this often while requests run


class Guard:
    """The deadline of one request and the sockets it uses; ``expired`` once the watchdog cut them. Its own lock
    orders a cut against :meth:`Watchdog.disarm`, so requests never wait for each other."""

    __slots__ = ("deadline", "expired", "done", "socks", "lock")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = False
        self.done = False
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()


def _shutdown(sock: socket.socket) -> None:
    """Shut the socket down under whoever reads it (the base class call: TLS sockets are cut the same way)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class Watchdog:
    """One daemon thread that cuts the sockets of requests whose deadline passed. Arming and disarming take no
    shared lock (a dict insert and pop): with many fetcher threads a shared lock is where they would queue."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._active: dict[int, Guard] = {}
        self._wake = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._local = threading.local()

    def arm(self, deadline: float) -> Guard:
        """Start watching a request of this thread; sockets it uses until :meth:`disarm` are cut at ``deadline``
        (nutch2/mapred/clock.py's `now()`)."""
        guard = Guard(deadline)
        if self._thread is None or not self._thread.is_alive():
            with self._start_lock:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="nutch2-watchdog", daemon=True)
                    self._thread.start()
        self._active[id(guard)] = guard
        self._local.guard = guard
        if not self._wake.is_set():
            self._wake.set()
        return guard

    def disarm(self, guard: Guard) -> None:
        """The request is over: its sockets are never cut after this returns."""
        self._local.guard = None
        self._active.pop(id(guard), None)
        with guard.lock:
            guard.done = True
            guard.socks.clear()

    def shorten(self, deadline: float) -> None:
        """Every request armed now ends by ``deadline`` at the latest (a stop request: in-flight requests get
        their own timeout, not their whole budget)."""
        for guard in list(self._active.values()):
            if guard.deadline > deadline:
                guard.deadline = deadline
        self._wake.set()

    def attach(self, sock: socket.socket) -> None:
        """A socket the current thread's armed request uses (cut at once when the deadline already passed); a
        socket attached already is kept once (an HTTP/2 connection attaches its socket at every write)."""
        guard: Guard | None = getattr(self._local, "guard", None)
        if guard is None:
            return
        with guard.lock:
            if guard.done or any(s is sock for s in guard.socks):
                return
            guard.socks.append(sock)
            if guard.expired:
                _shutdown(sock)

    def _run(self) -> None:
        while True:
            if not self._active:
                self._wake.clear()
                if not self._active:  # armed between the look and the clear: it set the event again
                    self._wake.wait()
            time.sleep(_GRANULARITY)
            now = clock.now()  # deadlines are the fetch clock's: time this process was stopped is not counted
            for guard in list(self._active.values()):
                if guard.deadline <= now and not guard.expired:
                    with guard.lock:
                        if not guard.done:
                            guard.expired = True
                            for sock in guard.socks:
                                _shutdown(sock)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset)  # a forked worker starts its own thread; no inherited lock


class _LineEnds:
    """The response's file while its status line and headers are read: notes a line the end of the stream cut."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp
        self.cut = False

    def readline(self, limit: int = -1) -> bytes:
        line = self._fp.readline(limit)
        if not line.endswith(b"\n") and (limit < 0 or len(line) < limit):  # a line too long is http.client's error
            self.cut = True
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fp, name)


class WholeHeadResponse(http.client.HTTPResponse):
    """http.client takes the end of the stream for the end of the headers, so a server that closes the connection
    midway through them would give a whole answer with no body (an empty page replacing a good one). Here that is
    a RemoteDisconnected naming it (urllib3 wraps it, as it does a server that closed before the status line)."""

    def begin(self) -> None:
        inner, tracked = self.fp, _LineEnds(self.fp)
        self.fp = tracked  # type: ignore[assignment]
        try:
            super().begin()
        finally:
            if self.fp is tracked:  # (None if something closed it meanwhile)
                self.fp = inner
        if tracked.cut:
            self.close()
            raise http.client.RemoteDisconnected("connection closed mid-headers")


class _Guarded:
    """Mixed into urllib3's connections: hands each socket they open, and the one they reuse for a request, to
    the watchdog (an HTTPS socket is attached before its TLS handshake). With an `address_policy` (a subclass per
    pool manager sets it), a connection goes only to an address the policy allows (nutch2/fetch/addresses.py)."""

    sock: socket.socket | None
    address_policy: AddressPolicy | None = None
    response_class = WholeHeadResponse

    def _new_conn(self) -> socket.socket:
        policy = self.address_policy
        sock = super()._new_conn() if policy is None else self._guarded_conn(policy)  # type: ignore[misc]
        WATCHDOG.attach(sock)
        return sock

    def _guarded_conn(self, policy: AddressPolicy) -> socket.socket:
        """urllib3's _new_conn, connecting through the policy (AddressDenied passes through as it is)."""
        conn: Any = self
        try:
            return policy.connect(conn._dns_host, conn.port, conn.timeout, conn.source_address, conn.socket_options)
        except socket.gaierror as e:
            raise NameResolutionError(conn.host, conn, e) from e
        except TimeoutError as e:
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out. (connect timeout="
                                            f"{conn.timeout})") from e
        except OSError as e:
            raise NewConnectionError(conn, f"Failed to establish a new connection: {e}") from e

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


def guard(manager: PoolManager, socks: bool = False, addresses: AddressPolicy | None = None) -> PoolManager:
    """`manager` (a PoolManager, ProxyManager or SOCKSProxyManager) with connections that report their sockets to
    :data:`WATCHDOG`; through a proxy, the connection to the proxy is the one that is cut. `addresses`: the
    address guard of its direct connections (a proxy is the user's choice: connections to it are not checked)."""
    pools = _socks_pools() if socks else {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}
    if addresses is not None:
        pools = {scheme: _with_policy(pool, addresses) for scheme, pool in pools.items()}
    manager.pool_classes_by_scheme = pools
    return manager


def _with_policy(pool: type, policy: AddressPolicy) -> type:
    """A pool class whose connections connect through `policy`."""
    connection = type(f"Policy{pool.ConnectionCls.__name__}", (pool.ConnectionCls,),  # type: ignore[attr-defined]
                      {"address_policy": policy})
    return type(f"Policy{pool.__name__}", (pool,), {"ConnectionCls": connection})


def timed_out(exc: BaseException) -> bool:
    """Whether urllib3's error is a timeout (it makes a refused connection a ConnectTimeoutError too)."""
    if isinstance(exc, NewConnectionError):
        return "timed out" in str(exc)
    return isinstance(exc, (TimeoutErrorU3, socket.timeout))


def _socks_pools() -> dict[str, type]:
    """Guarded pool classes for a SOCKS proxy (urllib3's contrib.socks needs PySocks: imported only when used)."""
    from urllib3.contrib.socks import (
        SOCKSConnection,
        SOCKSHTTPConnectionPool,
        SOCKSHTTPSConnection,
        SOCKSHTTPSConnectionPool,
    )

    class GuardedSOCKSConnection(_Guarded, SOCKSConnection):
        pass

    class GuardedSOCKSHTTPSConnection(_Guarded, SOCKSHTTPSConnection):
        pass

    class GuardedSOCKSPool(SOCKSHTTPConnectionPool):
        ConnectionCls = GuardedSOCKSConnection

    class GuardedSOCKSHTTPSPool(SOCKSHTTPSConnectionPool):
        ConnectionCls = GuardedSOCKSHTTPSConnection

    return {"http": GuardedSOCKSPool, "https": GuardedSOCKSHTTPSPool}
