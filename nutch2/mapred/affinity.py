"""One processor for the threads of each process that runs tasks (mapreduce.task.pin.cpu, Linux).

A Python process runs one thread at a time (the GIL), and a task's threads hand work to each other all the time:
the fetcher's threads, the feeder and the store's writer; the parse and its time box. When the kernel spreads
those threads over processors, every hand-off wakes another processor, which on a virtual machine costs more
than the work handed over: a one-task parse of 5,000 pages took 11 CPU seconds with its threads free and 7.8 on
one processor (bench/RESULTS.md). So a task's thread keeps itself, and the threads it starts, on one processor:
the processes runner gives the command's own task and each worker a processor in turn (the command's pid picks
the first), so its tasks use every processor; the local runner, whose tasks share one interpreter, gives them all
the command's processor. A process holds its processor (a lock file) while its tasks run: a processor that another
process of the same user holds is passed over for the next free one, and with none free the task's threads are
left to the kernel, so two commands (two crawls, two test workers) do not pile onto one processor. Another
program a task starts (a browser) gets every processor again (`unpinned`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from nutch2.config import Configuration

# the processors this process may use, read before any of its threads keeps itself to one (a command started
# under `taskset` keeps to those)
_ALL: tuple[int, ...] = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
# a lock file a processor: a process holds its processor's while its tasks run, so that the task processes of this
# user's commands take free processors (two test workers, two crawls); the kernel drops a dead process's lock
_FOLDER = Path(tempfile.gettempdir()) / f"nutch2-cpus-{os.getuid()}" if hasattr(os, "getuid") else None
_place = [0, 0]  # (slot, base): this process is the slot-th of its command (0: the command), base its command's pid
_lock = threading.Lock()
_hold: tuple[int, int] | None = None  # (processor, its lock file's descriptor) while this process's tasks run
_tasks = 0  # tasks of this process running on it


def place(slot: int, base: int) -> None:
    """This process is the `slot`-th that runs the tasks of the command whose pid is `base` (a worker's start)."""
    _place[:] = [slot, base]


def cpu_of(slot: int, base: int) -> int | None:
    """The processor of the `slot`-th process of a command (base: its pid); None where there is no choice."""
    if len(_ALL) < 2:
        return None
    return _ALL[(base + slot) % len(_ALL)]


def _take(first: int) -> tuple[int, int] | None:
    """(processor, descriptor of its lock): the first processor from `first` on that no other process holds."""
    assert _FOLDER is not None
    _FOLDER.mkdir(mode=0o700, exist_ok=True)
    folder = _FOLDER.lstat()
    if folder.st_uid != os.getuid() or not stat.S_ISDIR(folder.st_mode):  # another user's, or a link: not ours
        return None
    at = _ALL.index(first)
    for cpu in _ALL[at:] + _ALL[:at]:
        fd = os.open(_FOLDER / f"cpu{cpu}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return cpu, fd
        except OSError:
            os.close(fd)
    return None


def _enter(conf: Configuration) -> int | None:
    """The processor this process's tasks keep to (taken now, or already held by its running tasks); None: not
    kept (the setting is off, one processor, or every processor is another process's)."""
    global _hold, _tasks
    first = cpu_of(*_place) if _place[1] else cpu_of(0, os.getpid())
    if first is None or _FOLDER is None or not conf.get_bool("mapreduce.task.pin.cpu"):
        return None
    with _lock:
        if _hold is None:
            try:
                _hold = _take(first)
            except OSError:  # no lock folder here (a read-only temporary folder): the kernel places the threads
                return None
            if _hold is None:
                return None
        _tasks += 1
        return _hold[0]


def _leave() -> None:
    global _hold, _tasks
    with _lock:
        _tasks -= 1
        if _tasks == 0 and _hold is not None:
            fd, _hold = _hold[1], None
            os.close(fd)  # the lock goes with it


@contextlib.contextmanager
def pinned(conf: Configuration) -> Iterator[None]:
    """Run the calling thread, and the threads it starts meanwhile, on this process's task processor (left to
    the kernel where that cannot be: never a reason for a task to fail)."""
    cpu = _enter(conf)
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:  # the processor was taken from this process (a cpuset changed under it)
        cpu = None
    try:
        yield
    finally:
        if cpu is not None:
            os.sched_setaffinity(0, before)
        _leave()


@contextlib.contextmanager
def unpinned() -> Iterator[None]:
    """The calling thread on every processor of the process meanwhile: around starting another program, which
    inherits the starting thread's processors."""
    if not _ALL:
        yield
        return
    before = os.sched_getaffinity(0)
    if before == set(_ALL):
        yield
        return
    os.sched_setaffinity(0, _ALL)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
