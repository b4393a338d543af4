"""The Tool layer (Nutch 2's NutchTool): one class per command, run the same way by the CLI and the job API.

A tool declares its typed arguments (`Args`, nutch2/tools/args.py), the locks it takes, and for the batch steps
its place in the batch life cycle (nutch2/crawldb/lifecycle.py); `execute(run)` takes the locks, runs the jobs and
returns an exit code while `run` collects what the tool produced: counters per job (live), result values and
output lines. Stopping (a signal, or the API's stop) and the exit codes are the same for every tool:
0 done, 1 the tool could not do its job (one line says why), 2 bad usage, 130 stopped (the line names the
command that resumes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from typing import Any, ClassVar, Generic, TypeVar

from nutch2 import logs
from nutch2.config import Configuration
from nutch2.errors import NothingWritten
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters, FoldedCounters
from nutch2.mapred.measures import is_measure
from nutch2.plugin import Plugins
from nutch2.stores import (
    BatchLock,
    crawl_exists,
    crawl_id_of,
    crawl_lock,
    creation_begins,
    creation_ends,
    discard_empty_crawl,
    open_store,
)
from nutch2.stores.base import DataStore
from nutch2.tools.args import ToolArgs

log = logging.getLogger(__name__)

_KEEP_LINES = 1000  # output lines a run keeps for the job API
_KEEP_JOBS = 50  # ended jobs whose counters a run keeps apart; older ones are added up per job name
# control characters a result line shows as escapes: a page's title, text or headers must not drive the terminal
# (ESC sequences, BEL, a carriage return that hides what came before); tabs and line breaks stay
_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\t\n"}


class Run:
    """One run of a tool: its live counters per job, its result values and where its output lines go."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        self._emit = emit
        self._reported: set[int] = set()  # ids of the jobs in _counters whose summary was shown
        self._counters: list[Counters] = []  # every job's own, in order (crawl runs many); older ended ones folded
        self._lock = threading.Lock()  # changes to _counters (the pipelined crawl's steps run in two threads)
        self.values: dict[str, Any] = {}
        self.lines: list[str] = []
        self.message = ""  # the last summary or result line: what the job API shows as the job's message

    def child(self) -> Run:
        """A run for a tool that is one step of this one (crawl's steps): the same counters and values, its
        result lines not shown."""
        sub = Run(emit=lambda _line: None)
        sub._counters = self._counters
        sub._lock = self._lock
        sub._reported = self._reported
        sub.values = self.values
        return sub

    def job_counters(self, job: str) -> Counters:
        """New counters for one job of this run (its summary line shows them alone)."""
        counters = Counters(job)
        with self._lock:
            self._counters.append(counters)
        return counters

    def summary(self, counters: Counters) -> None:
        """The one summary line of a job."""
        with self._lock:
            if not any(c is counters for c in self._counters):
                self._counters.append(counters)
        if counters.ended is None:  # a job no runner ran: it ends with its summary (the metrics' seconds)
            counters.ended = time.monotonic()
        self.message = counters.summary()
        log.info(self.message)
        self._reported.add(id(counters))
        self._fold()

    def _fold(self) -> None:
        """Keep the run's counters bounded: a continuous crawl runs jobs for weeks, and one Counters per job grew
        its memory (and each metrics scrape's work) without end. Past _KEEP_JOBS ended jobs whose summary was
        shown, the oldest are added up into one FoldedCounters per job name; the totals, runs and seconds that
        the job API and the metrics show stay the same. The list is swapped in one step, so a reader's copy
        holds either the parts or their sum."""
        with self._lock:
            done = [c for c in self._counters if id(c) in self._reported and not isinstance(c, FoldedCounters)]
            if len(done) <= _KEEP_JOBS:
                return
            old = {id(c) for c in done[:len(done) - _KEEP_JOBS]}
            groups: dict[str, list[Counters]] = {}
            for c in self._counters:
                if id(c) in old or isinstance(c, FoldedCounters):
                    groups.setdefault(c.job, []).append(c)
            folded: list[Counters] = [FoldedCounters(job, parts) for job, parts in groups.items()]
            self._counters[:] = folded + [c for c in self._counters
                                          if id(c) not in old and not isinstance(c, FoldedCounters)]
            self._reported -= old

    def stopped(self) -> None:
        """The summary line of the job a stop cut short (the last one this run started), if it started one."""
        if self._counters and self._counters[-1].ended is None:
            log.info(self._counters[-1].summary(stopped=True))

    def out(self, line: str) -> None:
        """A result line (stdout on the CLI)."""
        if len(self.lines) < _KEEP_LINES:
            self.lines.append(line)
        self.message = line
        if self._emit is None:
            print(line.translate(_CONTROLS), flush=True)
        else:
            self._emit(line)

    def counters_json(self) -> dict[str, dict[str, int]]:
        """Counters per job name, added up over the run's jobs of that name (live while they run); the measures
        (nutch2/mapred/measures.py) are the metrics' (`jobs()`), not shown here."""
        out: dict[str, dict[str, int]] = {}
        for c in list(self._counters):
            total = out.setdefault(c.job, {})
            for k, v in c.as_dict().items():
                if not is_measure(k):
                    total[k] = total.get(k, 0) + v
        return out

    def jobs(self) -> list[Counters]:
        """The counters of every job of this run so far, in order (the metrics read them)."""
        return list(self._counters)


A = TypeVar("A", bound=ToolArgs)


class Tool(Generic[A]):
    """Base of every command, typed by its arguments (`class Fetch(BatchTool[FetchArgs])`). Subclasses set the
    class attributes and implement run()."""

    name: ClassVar[str]
    help: ClassVar[str]
    Args: ClassVar[type[ToolArgs]] = ToolArgs
    crawl: ClassVar[bool] = True  # works on one crawl (takes -crawlId)
    job: ClassVar[bool] = True  # offered by the job API (server, search and the checkers are not)
    crawl_lock: ClassVar[bool] = False  # takes the crawl's lock (rewrites the table: inject, generate, updatedb)
    batch_lock: ClassVar[bool] = False  # takes the lock of its batch (one job per batch at a time)
    plugin_points: ClassVar[tuple[str, ...]] = ()  # the extension points its jobs use, built once to check them
    creates: ClassVar[bool] = False  # may create the crawl (its lock is taken in a store it creates)

    def __init__(self, conf: Configuration, crawl_id: str | None, args: A) -> None:
        self.conf = conf
        self.crawl_id = crawl_id
        self.args: A = args

    # ---------------------------------------------------------------- life cycle
    def execute(self, run: Run) -> int:
        """Check the inputs, take the locks, run, release: the exit code."""
        self.prepare()
        new = self.creates and self.crawl and crawl_exists(self.conf, self.crawl_id) is False
        creator: str | None = None  # this command's CREATING record (it made the crawl, or took an empty one on)
        ended = False  # ran to its end (a stop or a failure leaves the record, for a rerun to take the crawl on)
        try:
            with ExitStack() as stack:
                port, path = getattr(self.args, "metricsPort", None), getattr(self.args, "metricsFile", None)
                if port is not None or path is not None:  # before the locks: a port in use fails first
                    from nutch2.tools.metrics import exported

                    stack.enter_context(exported(self.conf, run.jobs, port, path))
                for lock in self.locks():
                    stack.enter_context(lock)
                if self.creates and self.crawl:  # (a creator stopped before it wrote a row: its crawl is ours)
                    creator = creation_begins(self.conf, self.crawl_id, self.name, new)
                    new = new or creator is not None
                if self.crawl:  # a tool of no crawl (the checkers) writes nothing, a log file included
                    logs.command_started()
                code = self.run(run)
                ended = True
                return code
        except NothingWritten as e:  # the crawl this command created holds nothing: it is not left behind
            ended = True
            if new and discard_empty_crawl(self.conf, self.crawl_id, self.name):
                raise NothingWritten(f"{e}; crawl {crawl_id_of(self.conf, self.crawl_id) or '(no id)'} was not "
                                     "created") from None
            raise
        finally:
            if creator is not None:
                creation_ends(self.conf, self.crawl_id, creator, keep=not ended)

    def locks(self) -> Iterator[AbstractContextManager[Any]]:
        """The locks, each taken as it is made (one that cannot be taken releases those taken before it)."""
        if self.crawl_lock:
            yield crawl_lock(self.conf, self.crawl_id, self.name, create=self.creates, log=log.info)
        if self.batch_lock:
            yield BatchLock(self.conf, self.crawl_id, self.locked_batch(), self.name, log=log.info)

    def locked_batch(self) -> str | None:
        """The batch whose lock this tool takes (None: every batch)."""
        return getattr(self.args, "batch_id", None)

    def prepare(self) -> None:
        """Check what can be checked before any lock is taken or file written (bad input fails here): by
        default, that the runner can run this many tasks."""
        if self.job:
            make_runner(self.conf, self.tasks())
            Plugins(self.conf).check(self.plugin_points)  # a plugin that cannot load or start stops it here

    def run(self, run: Run) -> int:
        raise NotImplementedError

    def resume_flags(self) -> list[str]:
        """Flags to add to the same command to resume it after a stop (none: the same command again)."""
        return []

    # ---------------------------------------------------------------- helpers
    def store(self, create: bool = False) -> DataStore:
        return open_store(self.conf, self.crawl_id, create=create)

    def tasks(self) -> int | None:
        return getattr(self.args, "num_tasks", None)


TOOLS: dict[str, type[Tool[Any]]] = {}
T = TypeVar("T", bound=type[Tool[Any]])


def tool(cls: T) -> T:
    """Register a tool class under its name (the CLI command and the job API type)."""
    TOOLS[cls.name] = cls
    return cls

