"""Pipelined crawl rounds (crawl.pipeline): the tail of batch r — parse, updatedb, index, updatehostdb — runs in a
thread beside round r+1's generate and fetch, so that a core left idle by one job's last tasks works for the other.

What runs beside what, and why no row is written by two jobs at once:
- parse r beside generate r+1 and fetch r+1: parse writes batch r's rows only; generate skips rows that carry a
  generate mark, and fetch r+1 writes batch r+1's rows only.
- updatedb r waits for generate r+1 to end (both rewrite rows outside any batch, and generate refuses to start
  while an updatedb is under way); its first step then runs beside fetch r+1, leaving alone the link targets that
  are in batch r+1 (jobs/updatedb.py: `deferred_in_flight`), and the batch stays "updating".
- once fetch r+1 has ended, updatedb r runs again under the same run id, as after a kill: it writes those
  targets and commits; index r and updatehostdb follow, and round r+2 waits for them.
Each step is the ordinary tool with its batch id, journal record and locks. A kill leaves at most two batches
under way; the same command finishes the older ones (Crawl.finish_interrupted), then fetches the newest (if its
fetch did not end) and runs its tail beside the next round's generate and fetch, as the killed crawl would have:
the batches that follow are those of an uninterrupted crawl.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Protocol

from nutch2.crawldb.journal import FETCHED, INDEXED, PARSED, UPDATED, reached
from nutch2.mapred import stop
from nutch2.tools.base import Run
from nutch2.tools.batch import Fetch, FetchArgs, Generate, GenerateArgs
from nutch2.tools.hostdb import UpdateHostDb, UpdateHostDbArgs

log = logging.getLogger(__name__)


class Crawl(Protocol):
    """What the pipeline uses of the crawl tool (nutch2/tools/crawl.py, which imports this module)."""

    args: Any
    conf: Any
    indexing: bool
    solr_url: str | None
    kept: str | None

    def step(self, run: Run, cls: type, args: Any) -> int: ...
    def parse(self, run: Run, batch: str, resume: bool = False) -> None: ...
    def update(self, run: Run, batch: str, defer_in_flight: bool = False) -> None: ...
    def index(self, run: Run, batch: str) -> None: ...
    def _state(self, batch: str) -> str: ...
    def finish_interrupted(self, run: Run, keep_last: bool = False) -> int: ...
    def stop_file(self) -> Any: ...
    def stop_file_found(self, r: int) -> bool: ...
    def rounds_text(self) -> str: ...
    def rounds_value(self) -> int: ...
    def record_crawl(self, value: dict | None) -> None: ...
    def wait_for_work(self, run: Run, since: int | None = None) -> None: ...
    def gather(self, run: Run, started: float, generated: int) -> None: ...
    def dedup_due(self, run: Run) -> None: ...


class Tail(threading.Thread):
    """The steps of one fetched batch after its fetch, in a thread; the next round's generate and fetch tell it
    when they have ended (`generated`, `fetched`)."""

    def __init__(self, crawl: Crawl, run: Run, batch: str) -> None:
        super().__init__(name=f"tail-{batch}", daemon=True)
        self.crawl = crawl
        self.run_ = run
        self.batch = batch
        self.generated = threading.Event()  # the next round's generate ended (or none comes)
        self.fetched = threading.Event()  # the next round's fetch ended (or none comes)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.steps()
        except BaseException as e:  # noqa: BLE001 - the crawl's thread raises it (end())
            self.error = e

    def steps(self) -> None:
        c, run, batch, a = self.crawl, self.run_, self.batch, self.crawl.args
        if not reached(c._state(batch), PARSED):
            c.parse(run, batch)
        if not reached(c._state(batch), UPDATED):
            _wait(self.generated)
            c.update(run, batch, defer_in_flight=not self.fetched.is_set())
            _wait(self.fetched)
            if not reached(c._state(batch), UPDATED):
                c.update(run, batch)
        if c.indexing and not reached(c._state(batch), INDEXED):
            c.index(run, batch)
        if a.hostdbupdate:
            c.step(run, UpdateHostDb, UpdateHostDbArgs(num_tasks=a.num_tasks))

    def end(self) -> None:
        """No more waiting for a next round: let the tail run to its end, then raise what it raised."""
        self.generated.set()
        self.fetched.set()
        while self.is_alive():
            self.join(0.2)  # a few times a second: the main thread runs the signal handler
        error, self.error = self.error, None  # raised once: ending it again (the rounds' finally) is a no-op
        if error is not None:
            raise error


def _wait(event: threading.Event) -> None:
    while not event.wait(0.2):
        stop.check()


def rounds(crawl: Crawl, run: Run) -> None:
    """Crawl.rounds, pipelined: the same rounds, each batch's tail beside the next round's generate and fetch."""
    a = crawl.args
    top_n = a.topN or crawl.conf.get_int("crawl.topN")
    r = crawl.finish_interrupted(run, keep_last=True)
    tail: Tail | None = None
    try:
        if crawl.kept is not None:  # the newest batch under way: fetched, then its tail beside the next round
            log.info(f"crawl: finishing batch {crawl.kept} (its steps after the fetch beside the next round)")
            if not reached(crawl._state(crawl.kept), FETCHED):
                crawl.step(run, Fetch, FetchArgs(batch=crawl.kept, threads=a.threads, resume=True,
                                                 num_tasks=a.num_tasks))
            tail = Tail(crawl, run, crawl.kept)
            tail.start()
        while a.rounds in (None, -1) or r <= a.rounds:
            if tail is not None and crawl.stop_file().exists():
                tail, _ = None, tail.end()  # STOP: the batch under way is finished first
            if crawl.stop_file_found(r):
                return
            log.info(f"crawl: round {r}{crawl.rounds_text()}")
            crawl.record_crawl({"round": r, "rounds": crawl.rounds_value()})
            asked = int(time.time() * 1000)  # rows that come due after this, generate may not have seen
            try:
                code = crawl.step(run, Generate, GenerateArgs(topN=top_n, num_tasks=a.num_tasks))
            finally:
                if tail is not None:
                    tail.generated.set()
            if code != 0:
                if tail is not None:  # the batch under way may make rows due: generate again once it is updated
                    tail, _ = None, tail.end()
                    continue
                if not a.continuous:
                    log.info("crawl: nothing left to fetch, stopping")
                    return
                crawl.wait_for_work(run, since=asked)
                continue
            batch = run.values["batchId"]
            generated = next(c.get("generated") for c in reversed(run.jobs()) if c.job == "generate")
            crawl.record_crawl({"round": r, "rounds": crawl.rounds_value(), "batch": batch})
            try:
                crawl.step(run, Fetch, FetchArgs(batch=batch, threads=a.threads, num_tasks=a.num_tasks))
            finally:
                if tail is not None:
                    tail.fetched.set()
            if tail is not None:
                tail, _ = None, tail.end()
            tail = Tail(crawl, run, batch)
            tail.start()
            r += 1
            if a.continuous and generated < top_n:  # every due row was taken: the batch's tail, then a gather
                tail, _ = None, tail.end()
                if crawl.indexing:  # nothing runs beside it now
                    crawl.dedup_due(run)
                crawl.gather(run, asked / 1000, generated)
    finally:
        if tail is not None:
            _end_after(tail)


def _end_after(tail: Tail) -> None:
    """End the tail as the rounds end (normally or by an exception): its own failure is raised unless the rounds
    failed otherwise (a stop in one thread stops the other: the first real error is the one to tell)."""
    raising = sys.exc_info()[1]
    try:
        tail.end()
    except stop.Stopped:
        if raising is None:
            raise
    except BaseException:
        if raising is None or isinstance(raising, stop.Stopped):
            raise
        log.exception(f"crawl: the steps of batch {tail.batch} failed too")
