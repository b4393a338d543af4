"""What the Cassandra store says when its server is gone or silent (no server needed): one line with what to
check, and no traceback of the driver's scheduler thread at exit."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from nutch2.stores.cassandra import _failed, _quiet_exit


def test_a_server_gone_or_silent_is_named_with_what_to_check() -> None:
    class OperationTimedOut(Exception):
        pass

    class NoHostAvailable(Exception):
        pass

    timed_out = OperationTimedOut("errors={'127.0.0.1:9042': 'Client request timeout. See Session.execute'}")
    assert _failed(timed_out) == ("no answer within storage.cassandra.timeout, retries included; is the server up "
                                  "and not overloaded? (docker/services.sh status cassandra)")
    assert _failed(NoHostAvailable("Unable to connect to any servers")) == (
        "no host available; is the server up? (docker/services.sh start cassandra)")
    assert _failed(ValueError("Invalid query: unknown column")) == "Invalid query: unknown column"


def test_a_read_refused_for_its_tombstones_names_the_setting() -> None:
    class ReadFailure(Exception):
        pass

    refused = ReadFailure('Error from server: code=1300 [Replica(s) failed to execute read] message="Operation '
                          'failed - received 0 responses and 1 failures: READ_TOO_MANY_TOMBSTONES from '
                          '/127.0.0.1:7000" info={\'consistency\': \'LOCAL_ONE\'}')
    assert _failed(refused) == ("the server refused a read past its tombstone_failure_threshold (deleted index "
                                "entries); lower storage.cassandra.index.gc.grace.seconds (README: Cassandra's "
                                "tombstones in a long crawl)")


def test_the_drivers_scheduler_at_exit_is_quiet_and_other_threads_are_not() -> None:
    shown: list[str] = []
    hook = _quiet_exit(lambda args: shown.append(args.thread.name))

    def args(name: str, exc: BaseException) -> SimpleNamespace:
        return SimpleNamespace(thread=threading.Thread(name=name), exc_type=type(exc), exc_value=exc,
                               exc_traceback=None)

    hook(args("Task Scheduler", RuntimeError("cannot schedule new futures after shutdown")))
    hook(args("Task Scheduler", ValueError("a real bug")))
    hook(args("fetcher-1", RuntimeError("cannot schedule new futures after shutdown")))
    assert shown == ["Task Scheduler", "fetcher-1"]


def test_a_statement_prepared_while_the_server_is_gone_is_retried_and_resumable() -> None:
    """A task's first request of each statement is its prepare: a task that starts while the server is down or
    frozen failed there with a plain StoreError at once (no retry, no `-resume` advice from the CLI); it is now
    retried as a request is, raised as StoreUnavailable and remembered, so the task's later calls fail at once."""
    import pytest

    from nutch2.errors import StoreUnavailable
    from nutch2.stores.base import Gone
    from nutch2.stores.cassandra import CassandraStore

    class NoHostAvailable(Exception):
        pass

    class Session:
        calls = 0

        def prepare(self, cql: str) -> object:
            Session.calls += 1
            raise NoHostAvailable("Unable to connect to any servers")

    store = CassandraStore.__new__(CassandraStore)
    store.where, store.retries, store.gone, store._prepared, store.session = "h:9042", 2, Gone(), {}, Session()
    with pytest.raises(StoreUnavailable, match="Cassandra at h:9042: no host available; is the server up"):
        store._prepare("SELECT 1")
    assert Session.calls == 3  # tried, then its 2 retries
    with pytest.raises(StoreUnavailable):
        store._prepare("SELECT 2")
    assert Session.calls == 3 and store._prepared == {}


def test_a_server_that_refuses_a_store_opened_mid_job_is_unavailable_not_misconfigured() -> None:
    """A task that opens the store after the server went away: StoreUnavailable (the CLI names the command that
    goes on once it answers), not a plain StoreError."""
    import socket

    import pytest

    pytest.importorskip("cassandra")
    from nutch2.errors import StoreUnavailable
    from nutch2.stores.cassandra import CassandraStore

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreUnavailable, match=f"cannot reach Cassandra at 127.0.0.1:{port}"):
        CassandraStore("t_webpage", ["127.0.0.1"], port, "k", "{}", "ONE", "ONE", "datacenter1", 4, 2.0, retries=0)


def test_a_server_gone_between_the_pages_of_a_scan_is_a_store_error_not_a_traceback() -> None:
    """A scan's later pages were fetched by the driver's own result iterator, outside the retries: Cassandra
    killed mid `readdb -dump` of 24000 rows ended it with a traceback (RuntimeError: NoHostAvailable ...), frozen
    it held the dump 90 s. Each page is now a request of its own, retried, then StoreUnavailable."""
    import pytest

    from nutch2.errors import StoreUnavailable
    from nutch2.stores.base import Gone
    from nutch2.stores.cassandra import CassandraStore

    class NoHostAvailable(Exception):
        pass

    class Page:
        """The driver's ResultSet: the page in hand; iterating it goes on to fetch the next page."""

        def __init__(self, rows: list[tuple], state: bytes | None) -> None:
            self.current_rows, self.paging_state = rows, state

        def __iter__(self):  # type: ignore[no-untyped-def]
            yield from self.current_rows
            if self.paging_state is not None:
                raise NoHostAvailable("Unable to complete the operation against any hosts")

    class Session:
        def prepare(self, cql: str) -> str:
            return cql

        def execute(self, stmt: str, params: list, paging_state: bytes | None = None) -> Page:
            if paging_state is None:
                return Page([("a.com:http/", 1), ("b.com:http/", 1)], b"next")
            raise NoHostAvailable("Unable to complete the operation against any hosts")

    store = CassandraStore.__new__(CassandraStore)
    store.where, store.retries, store.gone, store._prepared, store.session = "h:9042", 1, Gone(), {}, Session()
    store.q, store.rows_read = '"k"."t"', 0
    seen = []
    with pytest.raises(StoreUnavailable, match="Cassandra at h:9042: read failed: no host available"):
        for page in store._scan_tokens(-5, 5, ("status",), None):
            seen.append(page.status)
    assert len(seen) == 2


def test_a_frozen_server_met_at_connect_is_named_silent_not_down() -> None:
    """kill -STOP of Cassandra, then a task opens the store: the driver's NoHostAvailable holds a connect that
    timed out. The line said 'no host available; is the server up? (docker/services.sh start cassandra)' of a
    server that is up and frozen; it now says no answer came, and to check its status."""

    class NoHostAvailable(Exception):
        pass

    frozen = NoHostAvailable("('Unable to connect to any servers', {'127.0.0.1:9042': OperationTimedOut('errors=Timed "
                             "out creating connection (10.0 seconds), last_host=None')})")
    assert _failed(frozen).startswith("no answer within storage.cassandra.timeout")
    refused = NoHostAvailable("('Unable to connect to any servers', {'127.0.0.1:9042': ConnectionRefusedError(111, "
                              "\"Tried connecting to [('127.0.0.1', 9042)]. Last error: Connection refused\")})")
    assert _failed(refused).startswith("connection refused; is the server up?")
    gone = NoHostAvailable("('Unable to complete the operation against any hosts', {<Host: 127.0.0.1:9042 "
                           "datacenter1>: ConnectionShutdown('[Errno 104] Connection reset by peer')})")
    assert _failed(gone).startswith("no host available; is the server up?")


def test_a_frozen_server_at_connect_is_not_told_to_start() -> None:
    """A store opened while the server is frozen: the line says no answer came and to check its status, not to
    check the contact points or start it."""
    import socket

    import pytest

    pytest.importorskip("cassandra")
    from nutch2.errors import StoreUnavailable
    from nutch2.stores.cassandra import CassandraStore

    with socket.socket() as frozen:  # accepts connections (the kernel's backlog), never answers
        frozen.bind(("127.0.0.1", 0))
        frozen.listen(8)
        port = frozen.getsockname()[1]
        with pytest.raises(StoreUnavailable) as e:
            CassandraStore("t_webpage", ["127.0.0.1"], port, "k", "{}", "ONE", "ONE", "datacenter1", 4, 1.0,
                           retries=0)
    assert str(e.value) == (f"cannot reach Cassandra at 127.0.0.1:{port} (no answer within storage.cassandra.timeout, "
                            "retries included); is it up and not overloaded? (docker/services.sh status cassandra)")
