"""The worker processes of the `processes` runner: plain interpreters that run pickled tasks sent over a socket.

A worker is `python -c "...serve(fd)"` with one end of a socket pair: the driver sends (task id, function,
arguments), the worker sends back ("done" | "failed", task id, value) and, a few times a second, a ("report",
records, requests in flight) line for the progress and stop lines. multiprocessing's pools would do the same with
a resource-tracker process beside them (~14 MB for semaphores this pool never needs), so they are not used.

A worker dies with the driver (PR_SET_PDEATHSIG), ignores Ctrl-C (the driver decides) and takes SIGTERM as a stop
request for the task it runs (a task starts with no stop request, and none starts while the driver is stopping).
A worker that dies (kill -9, out of memory) breaks the pool: its task and every queued one fail with `BrokenPool`,
and the runner starts fresh workers for the next job.

A worker whose resident memory has grown past `max_rss_mb` after a task retires with its result, and the pool
starts a fresh interpreter in its place (as Celery's max-memory-per-child): CPython keeps the arenas that a few
long-lived objects pin, so a worker's memory only grows over a crawl, and a fresh one gives it back.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection, Pipe
from typing import Any

from nutch2.errors import NutchError
from nutch2.mapred import affinity, hangs, progress, stop, timebox
from nutch2.mapred.memory import limit_arenas, rss_mb

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies
_REPORT_EVERY = 0.2  # seconds between a worker's reports (records done, requests in flight)
_EXIT_WAIT = 10.0  # seconds a command at exit waits for a worker to end its task
_SERVE = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
          "from nutch2.mapred.workers import serve; serve(int(sys.argv[2]))")


class BrokenPool(Exception):
    """A worker process died; its task and the queued ones cannot finish."""


class WorkerPool:
    """`size` worker processes; tasks wait in a queue for an idle one. `setup(*setup_args)` runs in each worker
    before its first task (a picklable function: its logging, its signal handlers)."""

    def __init__(self, size: int, setup: Callable[..., None], setup_args: tuple[Any, ...],
                 max_rss_mb: float = 0.0) -> None:
        self.reports: list[tuple[int, int]] = [(-1, -1)] * size  # per worker: records done, requests in flight
        self.live: dict[int, dict[str, int]] = {}  # per task (id of its future): its counters as last reported
        self.stuck: dict[int, list[str]] = {}  # per worker slot: the plugin calls stuck there (nutch2/mapred/hangs)
        self.retired = 0  # workers replaced after passing max_rss_mb
        self._retired_records = 0  # records done by the workers that retired (their last report)
        self.max_rss_mb = max_rss_mb
        self._setup = (setup, setup_args)
        self._lock = threading.Lock()
        self._queue: deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = deque()
        self._idle: list[int] = []
        self._running: dict[int, Future[Any]] = {}
        self._conns: list[Connection] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._broken = False
        self._closed = False
        for slot in range(size):
            self._add_worker(slot)
        self._unwatch = hangs.add_source(self.stuck_lines)

    def grow(self, size: int) -> None:
        """Start workers until there are `size` (two jobs at once, a pipelined crawl's, each get theirs)."""
        with self._lock:
            if self._broken or self._closed:
                return
            while len(self._conns) < size:
                self.reports.append((-1, -1))
                self._add_worker(len(self._conns))
            self._dispatch()

    def _add_worker(self, slot: int) -> None:
        """Start the worker of a new slot, idle, and its reader thread."""
        conn, proc = self._start(slot)
        self._conns.append(conn)
        self._procs.append(proc)
        self._idle.append(slot)
        threading.Thread(target=self._read, args=(slot,), name=f"worker-{slot}", daemon=True).start()

    def _start(self, slot: int) -> tuple[Connection, subprocess.Popen[bytes]]:
        """A fresh worker interpreter for `slot`, sent its setup."""
        here, there = Pipe(duplex=True)
        proc = _spawn([sys.executable, "-c", _SERVE, json.dumps(sys.path), str(there.fileno())], there.fileno())
        there.close()
        here.send((os.getpid(), slot, *self._setup, self.max_rss_mb))
        return here, proc

    def records(self) -> int:
        """Records done by this pool's workers so far, retired ones included (it only grows)."""
        with self._lock:
            return self._retired_records + sum(max(0, n) for n, _ in self.reports)

    @property
    def broken(self) -> bool:
        """A worker died: the pool serves no more tasks (the runner starts a fresh one for the next job)."""
        return self._broken

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.returncode is None]

    def live_counts(self, future: Future[Any]) -> dict[str, int]:
        """The counters a task (its future) last reported while it ran; {} before its first report."""
        return self.live.get(id(future), {})

    def forget(self, futures: list[Future[Any]]) -> None:
        """Drop what these tasks reported (their phase has its final counts)."""
        for future in futures:
            self.live.pop(id(future), None)

    def stuck_lines(self) -> list[str]:
        """The plugin calls stuck in this pool's workers, as they last reported them."""
        return [line for lines in list(self.stuck.values()) for line in lines]

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._broken or self._closed:
                raise BrokenPool("the worker pool is shut down")
            self._queue.append((future, fn, args))
            self._dispatch()
        return future

    def shutdown(self, wait: bool = False) -> None:
        """Cancel the queued tasks and let the workers go: each ends after its current task (or dies with the
        driver). wait: until they have ended (a command at exit, so that it leaves nothing running)."""
        self._unwatch()
        with self._lock:
            self._closed = True
            queued = list(self._queue)
            self._queue.clear()
            for conn in self._conns:
                try:
                    conn.send(None)  # the worker's last message: it exits, and its reader here sees the end
                except (OSError, ValueError):
                    pass
        for future, _, _ in queued:
            future.cancel()
        for proc in self._procs if wait else ():
            _reap(proc)

    def _dispatch(self) -> None:
        """Hand queued tasks to idle workers (under the lock)."""
        while self._queue and self._idle and not self._closed:
            future, fn, args = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            if stop.requested():  # the driver is stopping: no task starts now
                future.set_exception(stop.Stopped())
                continue
            slot = self._idle.pop()
            try:
                self._conns[slot].send((id(future), fn, args))
            except (OSError, ValueError):  # the worker is gone: its reader fails the pool
                future.set_exception(BrokenPool(f"worker {slot} is gone"))
                continue
            self._running[slot] = future

    def _read(self, slot: int) -> None:
        """One worker's messages, until it ends: results settle futures, reports update `reports`. A worker
        that retires is replaced by a fresh one in its slot."""
        while self._serve_slot(slot):
            with self._lock:
                if self._closed:
                    return
                self._retired_records += max(0, self.reports[slot][0])
                self.reports[slot] = (-1, -1)
                self.stuck.pop(slot, None)
                self._conns[slot], self._procs[slot] = self._start(slot)
                self.retired += 1
                self._idle.append(slot)
                self._dispatch()
        with self._lock:
            if self._closed:
                return
            self._broken = True
            failed = [self._running.pop(slot)] if slot in self._running else []
            failed += [f for f, _, _ in self._queue]
            self._queue.clear()
        for future in failed:
            if not future.done():
                future.set_exception(BrokenPool(f"worker process {self._procs[slot].pid} died"))

    def _serve_slot(self, slot: int) -> bool:
        """Read the slot's worker until it ends; True when it retired (it said so with its last result)."""
        conn = self._conns[slot]
        retiring = False
        try:
            while True:
                try:
                    kind, *rest = conn.recv()
                except (EOFError, OSError):
                    raise
                except Exception as e:  # noqa: BLE001 - a result this process cannot unpickle fails its task
                    kind, rest = "failed", [None, RuntimeError(f"cannot read a worker's result: {e!r}"), False]
                if kind == "report":
                    self.reports[slot] = (rest[0], rest[1])
                    if len(rest) > 2 and rest[2] is not None:
                        self.live[rest[2][0]] = rest[2][1]
                    self.stuck[slot] = rest[3] if len(rest) > 3 else []
                    continue
                retiring = rest[2]
                with self._lock:
                    future = self._running.pop(slot)
                    if not retiring:  # a retiring worker gets no more tasks: its successor will
                        self._idle.append(slot)
                        self._dispatch()
                (future.set_result if kind == "done" else future.set_exception)(rest[1])
                if retiring:  # its last message: its records came just before
                    break
        except (EOFError, OSError):
            pass
        conn.close()
        if retiring:
            _reap(self._procs[slot])
        else:
            self._procs[slot].wait()
        return retiring  # its result is in: however it ended, its slot gets a fresh worker


def serve(fd: int) -> None:
    """A worker's life: set up, then run each task sent until the driver closes the socket."""
    limit_arenas()
    conn = Connection(fd)
    driver, slot, setup, setup_args, max_rss_mb = conn.recv()
    send_lock = threading.Lock()
    affinity.place(slot + 1, driver)  # the command's own task is the first (nutch2/mapred/affinity.py)
    _die_with(driver)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    setup(*setup_args)
    running: list[int | None] = [None]  # the id of the task this worker runs (its counters are reported live)
    threading.Thread(target=_report, args=(conn, send_lock, running), name="report", daemon=True).start()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:  # the driver let this worker go
            return
        task_id, fn, args = task
        running[0] = task_id
        stop.reset()  # a stop the driver forwarded was for the work running then, not for this task
        try:
            kind, value = "done", fn(*args)
        except BaseException as e:  # noqa: BLE001 - every failure goes to the driver, which decides
            kind, value = "failed", _picklable(e)
        running[0] = None  # its final counters go with its result
        size = rss_mb()
        left = timebox.stuck()
        retiring = 0 < max_rss_mb < size or bool(left)
        if left:
            log.warning(f"worker {slot}: its task left {', '.join(sorted(set(left)))} running (a plugin or a "
                        "fetcher thread that did not answer in time): a fresh process takes its place")
        elif retiring:
            log.debug(f"worker {slot}: {size:.0f} MB after its task (mapreduce.processes.worker.max.mb="
                      f"{max_rss_mb:g}): a fresh process takes its place")
        with send_lock:
            try:
                if retiring:  # its records so far, which the driver keeps counting after it has gone
                    conn.send(("report", progress.records(), -1))
                conn.send((kind, task_id, value, retiring))
            except OSError:
                return
        if retiring:
            return


_spawner: queue.Queue[tuple[Future[subprocess.Popen[bytes]], list[str], int]] | None = None
_spawner_lock = threading.Lock()


def _spawn(argv: list[str], fd: int) -> subprocess.Popen[bytes]:
    """Start a worker from one long-lived thread of this process. PR_SET_PDEATHSIG fires when the *thread* that
    started a child ends, not the process: a worker started from a job's own thread (the job API runs each job in
    a thread of its own) would be killed with that thread, and the next job would find the pool broken."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = queue.Queue()
            threading.Thread(target=_spawn_loop, args=(_spawner,), name="worker-spawner", daemon=True).start()
    future: Future[subprocess.Popen[bytes]] = Future()
    _spawner.put((future, argv, fd))
    return future.result()


def _spawn_loop(requests: queue.Queue[tuple[Future[subprocess.Popen[bytes]], list[str], int]]) -> None:
    while True:
        future, argv, fd = requests.get()
        try:
            with affinity.unpinned():  # a worker keeps to a processor only while it runs a task
                future.set_result(subprocess.Popen(argv, pass_fds=(fd,), stdin=subprocess.DEVNULL))
        except BaseException as e:  # noqa: BLE001 - the caller raises it
            future.set_exception(e)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a worker that was let go (or retired) to end; kill it if it has not within _EXIT_WAIT (stuck in a
    task that ignores its stop, or a thread a task left running)."""
    try:
        proc.wait(_EXIT_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _die_with(driver: int) -> None:
    """SIGKILL this worker when the driver dies (kill -9 of the command leaves nothing running)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux/glibc: the closed socket ends the worker after its task
        pass
    if os.getppid() != driver:  # the driver died before prctl took effect
        os._exit(1)


def _report(conn: Connection, send_lock: threading.Lock, running: list[int | None]) -> None:
    """Send this worker's records done, requests in flight and the running task's counters, a few times a
    second (under the send lock, so a report never follows its task's result)."""
    while True:
        n = stop.in_flight()
        with send_lock:
            task_id = running[0]
            counts = progress.live_counts() if task_id is not None else {}
            live = (task_id, counts) if task_id is not None and counts else None
            try:
                conn.send(("report", progress.records(), -1 if n is None else n, live, hangs.lines(local_only=True)))
            except OSError:
                return
        time.sleep(_REPORT_EVERY)


def _picklable(e: BaseException) -> BaseException:
    """The exception itself when it crosses to the driver intact, else one with its text: a NutchError stays one
    (the command's one-line error, e.g. Solr's 400 with its reason), anything else becomes a RuntimeError."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any pickling failure
        if isinstance(e, NutchError):
            return NutchError(str(e))
        return RuntimeError(f"{type(e).__name__}: {e}")
