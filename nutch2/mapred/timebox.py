"""Work that may never finish (a parser, a plugin's filter): run in a thread, given up on past its time.

Each calling thread has one long-lived worker thread per name; work runs there and the caller waits at most
`timeout` seconds. Work that overruns is abandoned — its thread is left to finish or to stay stuck (Python cannot
stop a thread) and the caller's next work gets a new thread — and the caller gets `Overrun`. Starting a thread per
call would cost a thread start and a GIL hand-off per document; a worker thread that has been idle a while exits.

A stop request (Ctrl-C, SIGTERM) ends the wait too: the work is abandoned as if it had overrun (`Overrun.stopped`),
so that a stop keeps its promise with a plugin stuck.

`owner(name)` says whose code a thread runs (a plugin's): a plugin that ends the process (`os._exit`) is named in
one line before the process ends, instead of the command ending with an exit code and no word.

`stuck()` names the abandoned threads still running: a worker process whose task left one behind is replaced by a
fresh interpreter (nutch2/mapred/workers.py), so a stuck plugin costs one process, not the rest of the crawl.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from nutch2.mapred import clock, stop

log = logging.getLogger(__name__)
T = TypeVar("T")
IDLE_EXIT = 10.0  # seconds a worker thread waits for work before it exits


class Overrun(Exception):
    """The work did not finish within its time (or before a stop request: `stopped`); it was abandoned."""

    def __init__(self, message: str, stopped: bool = False) -> None:
        super().__init__(message)
        self.stopped = stopped


class _Worker:
    """One long-lived daemon thread that runs submitted work in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._alive = False
        self.thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if not self._alive:
                self._alive = True
                self.thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
                self.thread.start()
            self._jobs.put(fn)

    def abandon(self) -> None:
        """The running work overran: leave this thread to it (it exits once the work ends)."""
        with self._lock:
            self._alive = False
            self._jobs.put(None)
        if self.thread is not None:
            with _lock:
                _abandoned.append(self.thread)

    def _loop(self) -> None:
        while True:
            try:
                fn = self._jobs.get(timeout=IDLE_EXIT)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._alive = False
                        return
                continue
            if fn is None:
                return
            fn()


_local = threading.local()
_lock = threading.Lock()
_abandoned: list[threading.Thread] = []


def run(fn: Callable[[], T], timeout: float | None, name: str) -> T:
    """fn() in this thread's worker `name`, waited for at most `timeout` seconds (None: run here, unbounded);
    Overrun when it takes longer. fn's own exceptions are raised here."""
    if timeout is None:
        return fn()
    workers: dict[str, _Worker] = getattr(_local, "workers", None) or {}
    _local.workers = workers
    worker = workers.get(name)
    if worker is None:
        worker = workers[name] = _Worker(name)
    box: list[Any] = []
    done = threading.Lock()  # held until the work ends: a lock costs far less than an Event per document
    done.acquire()

    def job() -> None:
        try:
            box.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box.append((False, e))
        finally:
            done.release()

    worker.submit(job)
    deadline = clock.now() + timeout  # time the process was stopped (Ctrl-Z) is not the plugin's
    while not done.acquire(timeout=min(0.1, max(0.0, deadline - clock.now()))):
        if clock.now() >= deadline or stop.requested():
            break
    if box:
        ok, value = box[0]
        if ok:
            return value  # type: ignore[no-any-return]
        raise value
    worker.abandon()
    del workers[name]
    if stop.requested():
        raise Overrun("stopped before it answered", stopped=True)
    raise Overrun(f"no answer within {timeout:g} s")


@contextlib.contextmanager
def owner(name: str) -> Iterator[None]:
    """Code of `name` (a plugin id) runs in this thread for the duration."""
    previous = getattr(_local, "owner", None)
    _local.owner = name
    try:
        yield
    finally:
        _local.owner = previous


_real_exit = os._exit
_pid = os.getpid()


def _exit(code: int) -> None:
    """os._exit, naming the plugin whose code called it (a forked child's exit is its own business)."""
    who = getattr(_local, "owner", None)
    if who and os.getpid() == _pid:
        try:
            log.error(f"nutch2: error: plugin {who} ended the process (os._exit({code})); fix it, or take it "
                      "out of plugin.includes")
            for handler in logging.getLogger("nutch2").handlers:  # where the lines of every module of nutch2 go
                handler.flush()
        except Exception:  # noqa: BLE001 - the process ends anyway
            pass
    _real_exit(code)


os._exit = _exit  # type: ignore[assignment]


def leave(thread: threading.Thread) -> None:
    """A thread its task gave up on while it runs (a hung fetcher thread): named by stuck() until it ends, so that
    a worker process that ran the task is replaced after it."""
    with _lock:
        _abandoned.append(thread)


def stuck() -> list[str]:
    """The names of abandoned threads still running in this process."""
    with _lock:
        _abandoned[:] = [t for t in _abandoned if t.is_alive()]
        return [t.name for t in _abandoned]


__all__ = ["Overrun", "leave", "run", "stuck"]
