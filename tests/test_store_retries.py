"""The service stores' retries (stores/base.py with_retries): a call that fails at once (refused, reset) is retried
with a backoff; one that waited out its timeout is tried once more, not `retries` times, so a server that accepts
and never answers fails the job after two timeouts, not after retries x timeout in silence; each retry is a line."""

from __future__ import annotations

import logging

import pytest

from nutch2.errors import StoreError
from nutch2.stores.base import with_retries
from nutch2.stores.hbase import _failed as hbase_failed


class Flaky:
    def __init__(self, error: Exception, fails: int) -> None:
        self.error, self.fails, self.calls = error, fails, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise self.error
        return "ok"


def call(fn: Flaky) -> str:
    return with_retries(fn, 5, lambda e: True, lambda e: StoreError(f"X at h:1: write failed: {e}"), 0.001)


def test_a_quick_failure_is_retried_up_to_retries(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        fn = Flaky(ConnectionResetError("reset by peer"), 3)
        assert call(fn) == "ok" and fn.calls == 4
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert lines[0] == "warning: X at h:1: write failed: reset by peer; trying again (1 of 5 retries)"
    fn = Flaky(ConnectionResetError("reset by peer"), 99)
    with pytest.raises(StoreError, match="reset by peer"):
        call(fn)
    assert fn.calls == 6


def test_a_timeout_is_tried_once_more(caplog: pytest.LogCaptureFixture) -> None:
    fn = Flaky(TimeoutError("timed out"), 99)
    with caplog.at_level(logging.WARNING), pytest.raises(StoreError, match="write failed: timed out"):
        call(fn)
    assert fn.calls == 2
    assert [r.getMessage() for r in caplog.records] == [
        "warning: X at h:1: write failed: timed out; trying again (1 of 1 retries)"]
    fn = Flaky(TimeoutError("timed out"), 1)  # a server that was slow once
    assert call(fn) == "ok" and fn.calls == 2


def test_hbase_says_what_to_check() -> None:
    refused = hbase_failed(Exception("TTransportException(type=1, message=\"Could not connect to ('127.0.0.1', "
                                     "9090)\")"))
    assert refused == "connection refused; is the Thrift server up? (docker/services.sh start hbase)"
    silent = hbase_failed(Exception("timed out"))
    assert silent == ("no answer within storage.hbase.timeout; is HBase up behind its Thrift server, and not "
                      "overloaded? (docker/services.sh status hbase)")


def test_a_client_whose_server_went_away_fails_its_later_calls_at_once() -> None:
    """The fetcher threads of a task each hold a write: once one call spent its retries on a silent server, the
    others fail at once (the task ends in two timeouts, not threads x two)."""
    from nutch2.errors import StoreUnavailable
    from nutch2.stores.base import Gone

    gone = Gone()
    silent = Flaky(TimeoutError("timed out"), 99)

    def guarded(fn: Flaky) -> str:
        return with_retries(fn, 5, lambda e: True, lambda e: StoreError(f"X at h:1: {e}"), 0.001, gone)

    with pytest.raises(StoreUnavailable, match="X at h:1: timed out"):
        guarded(silent)
    later = Flaky(TimeoutError("timed out"), 0)
    with pytest.raises(StoreUnavailable, match="X at h:1: timed out"):
        guarded(later)
    assert silent.calls == 2 and later.calls == 0
    refused = Flaky(ValueError("bad statement"), 99)  # not transient: the statement's own error, not the server's
    with pytest.raises(StoreError) as e:
        with_retries(refused, 5, lambda e: False, lambda e: StoreError(f"{e}"), 0.001, Gone())
    assert type(e.value) is StoreError and refused.calls == 1


def test_hbase_down_behind_its_thrift_server_fails_at_once_and_resumably() -> None:
    """The Thrift server answers an IOError once its own HBase client gave up on a dead or frozen master or region
    server (SocketTimeoutException, RetriesExhausted...): that was a plain StoreError quoting the Java message (no
    command to go on), or the call waited the gateway's 20 minutes. It is now StoreUnavailable, not retried (the
    gateway spent its retries), named as HBase down behind the gateway, and the store's later calls fail at once."""
    from contextlib import contextmanager

    from nutch2.errors import StoreUnavailable
    from nutch2.stores.base import Gone
    from nutch2.stores.hbase import HBaseStore

    class IOError(Exception):  # noqa: A001 - the name happybase's Thrift stubs give the gateway's error
        pass

    down = IOError("IOError(message=b'org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException: Failed 1 "
                   "action: IOException: 1 time, servers with issues: null')")
    assert hbase_failed(down) == ("the Thrift server answers, but HBase behind it does not "
                                  "(RetriesExhaustedWithDetailsException); is HBase up? (docker/services.sh status "
                                  "hbase)")
    frozen = IOError("IOError(message=b'org.apache.hadoop.hbase.DoNotRetryIOException: Zookeeper GET could not be "
                     "completed in 10000 ms')")  # the master, and ZooKeeper in it, stopped (kill -STOP)
    assert hbase_failed(frozen).startswith("the Thrift server answers, but HBase behind it does not (Zookeeper GET "
                                           "could not be completed); is HBase up?")
    calls = []

    class Conn:
        def open(self) -> None:
            pass

        def table(self, name: bytes) -> object:
            return name

    class Pool:
        @contextmanager
        def connection(self):  # type: ignore[no-untyped-def]
            yield Conn()

    def put(table: object) -> None:
        calls.append(table)
        raise down

    store = HBaseStore.__new__(HBaseStore)
    store.where, store.retries, store.gone, store.pool, store.tname = "h:9090", 5, Gone(), Pool(), b"t_webpage"
    store._timeout_s, store._server = 30.0, ("h", 9090, "buffered", "binary")
    with pytest.raises(StoreUnavailable, match=r"^HBase at h:9090: write failed: the Thrift server answers, but HBase "
                                               r"behind it does not \(RetriesExhaustedWithDetailsException\)"):
        store._with_retry("write", put)
    assert len(calls) == 1
    with pytest.raises(StoreUnavailable):
        store._with_retry("get", put)
    assert len(calls) == 1
    table_missing = IOError("IOError(message=b'org.apache.hadoop.hbase.TableNotFoundException: x_webpage')")
    assert "no crawl db x_webpage" in HBaseStore._with_retry.__globals__["_message"]("h:9090", "get", table_missing)


@pytest.mark.parametrize("answers", [False, True])
def test_a_frozen_thrift_server_fails_the_process_calls_after_one_timeout(monkeypatch: pytest.MonkeyPatch,
                                                                          answers: bool) -> None:
    """A Thrift server or HBase stopped (kill -STOP) takes connections and never answers: a call that waited
    storage.hbase.timeout was tried once more (a second whole timeout), and the lease's store and the other
    threads' waited theirs, so a frozen HBase ended a job after 66-82 s, not ~30. Now a new connection is asked
    (a short getTableNames): unanswered too, the call fails at once, and so do the process's other stores' calls
    for the next timeout; answered, the call is tried once more as before."""
    from contextlib import contextmanager

    from nutch2.errors import StoreUnavailable
    from nutch2.stores import hbase
    from nutch2.stores.base import Gone
    from nutch2.stores.hbase import HBaseStore

    monkeypatch.setattr(hbase, "_SILENT", {})
    probes: list[float] = []
    monkeypatch.setattr(hbase, "_answers", lambda *a: probes.append(a[-1]) or answers)
    calls = []

    class Pool:
        @contextmanager
        def connection(self):  # type: ignore[no-untyped-def]
            class Conn:
                def open(self) -> None:
                    pass

                def table(self, name: bytes) -> bytes:
                    return name
            yield Conn()

    def silent(table: object) -> None:
        calls.append(table)
        raise TimeoutError("timed out")

    def store_on(where: str) -> HBaseStore:
        store = HBaseStore.__new__(HBaseStore)
        store.where, store.retries, store.gone, store.pool, store.tname = where, 5, Gone(), Pool(), b"t_webpage"
        store._timeout_s, store._server = 30.0, ("h", 9090, "buffered", "binary")
        return store

    with pytest.raises(StoreUnavailable) as e:
        store_on("h:9090")._with_retry("get", silent)
    if answers:  # the server answers a new connection: the call was only slow, tried once more
        assert len(calls) == 2 and "nor to a new connection" not in str(e.value)
        return
    assert len(calls) == 1 and probes == [5.0]
    assert str(e.value) == ("HBase at h:9090: get failed: no answer within storage.hbase.timeout, nor to a new "
                            "connection; is HBase up behind its Thrift server, and not overloaded? "
                            "(docker/services.sh status hbase)")
    lease = store_on("h:9090")  # another store of the process (a lease's): fails at once, no wait of its own
    with pytest.raises(StoreUnavailable, match="nor to a new connection"):
        lease._with_retry("swap state", silent)
    assert len(calls) == 1 and len(probes) == 1
    store_on("other:9090")._with_retry("get", lambda t: None)  # another server is not concerned


def test_one_trying_again_line_per_store_and_outage(caplog: pytest.LogCaptureFixture) -> None:
    """A killed Thrift server: each thread of a task said a "trying again" line per retry (up to ~10 lines before
    the error). Now the store's calls say one for the outage; the retries themselves are unchanged, and once a
    call goes through, the next outage is said again."""
    import threading

    from nutch2.stores.base import Gone

    gone, up = Gone(), threading.Event()
    tries: list[int] = []
    failed = threading.Barrier(5)

    def call() -> str:
        tries.append(1)
        if len(tries) <= 5:
            failed.wait()  # every thread fails before any retries
        if not up.is_set():
            raise ConnectionRefusedError("refused")
        return "ok"

    caplog.set_level(logging.WARNING)
    threads = [threading.Thread(target=with_retries, args=(call, 5, lambda e: True,
                                                           lambda e: StoreError(f"X at h:1: get failed: {e}"),
                                                           0.05, gone)) for _ in range(5)]
    for t in threads:
        t.start()
    while len(tries) < 15:  # every thread retried at least twice
        threading.Event().wait(0.01)
    up.set()
    for t in threads:
        t.join()
    assert len(tries) >= 15
    lines = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
    assert lines == ["warning: X at h:1: get failed: refused; trying again (1 of 5 retries)"]
    up.clear()  # a second outage, after calls went through: said again
    with pytest.raises(StoreError):
        with_retries(call, 1, lambda e: True, lambda e: StoreError(f"X at h:1: get failed: {e}"), 0.001, gone)
    assert len([r for r in caplog.records if "trying again" in r.getMessage()]) == 2


def test_opening_a_store_on_a_frozen_thrift_server_is_said_and_not_waited_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Thrift server that takes connections and never answers (kill -STOP): opening the store said 'check
    hbase.thrift.host ...' (the settings were right) and each later open of the process (a job's next task, its
    lease) waited its own timeout. Now it is StoreUnavailable naming the silence, and the process's next opens on
    that server fail at once for one timeout."""
    import socket

    happybase = pytest.importorskip("happybase")
    from nutch2.errors import StoreUnavailable
    from nutch2.stores import hbase

    monkeypatch.setattr(hbase, "_SILENT", {})
    made = []
    pool = happybase.ConnectionPool
    monkeypatch.setattr(happybase, "ConnectionPool", lambda *a, **k: made.append(1) or pool(*a, **k))
    frozen = socket.socket()  # listens (the kernel takes connections) and never answers
    frozen.bind(("127.0.0.1", 0))
    frozen.listen(8)
    port = frozen.getsockname()[1]
    try:
        for _ in range(2):
            with pytest.raises(StoreUnavailable, match=rf"^HBase at 127.0.0.1:{port}: no answer within "
                                                       r"storage.hbase.timeout; is HBase up"):
                hbase.HBaseStore("t", "127.0.0.1", port, timeout_ms=300)
        assert len(made) == 1
    finally:
        frozen.close()
