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
