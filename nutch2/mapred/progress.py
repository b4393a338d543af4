"""Live progress of a job's tasks: how many records they have done, and the periodic progress line of a job.

Each task counts the records it read (a map task: rows) or took in (a reduce task) on its context; this module
adds up the tasks of this process, finished and running. Worker processes report their total to the driver
(nutch2/mapred/processes.py), so a runner can tell how far its job is wherever its tasks run. `JobProgress` turns that
into the job's progress line (nutch2/logs.py Progress: redrawn on a terminal, a log line every
log.progress.interval seconds elsewhere), as the fetcher does for pages.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from nutch2.config import Configuration
from nutch2.logs import Progress, Window
from nutch2.mapred import hangs

log = logging.getLogger(__name__)

_lock = threading.Lock()
_finished = [0]  # records of the tasks of this process that ended
_running: list[Any] = []  # contexts (with a `records` count) of the tasks running in this process


def task_started(ctx: Any) -> None:
    with _lock:
        _running.append(ctx)


def task_ended(ctx: Any) -> None:
    with _lock:
        if ctx in _running:
            _running.remove(ctx)
            _finished[0] += ctx.records


def live_counts() -> dict[str, int]:
    """The counters of the tasks running in this process now (a worker reports them to the driver)."""
    with _lock:
        running = list(_running)
    out: dict[str, int] = {}
    for ctx in running:
        for name, n in ctx.counters.as_dict().items():
            out[name] = out.get(name, 0) + n
    return out


def records() -> int:
    """Records done by every task of this process so far (it only grows)."""
    with _lock:
        return _finished[0] + sum(c.records for c in _running)


class JobProgress:
    """The progress line of one job while its tasks run: `phase(name)` at each phase (map, reduce), `close()`
    at the end. `done` counts the records of every task of the runner so far (it only grows)."""

    def __init__(self, job: str, phase: str, conf: Configuration, done: Callable[[], int], unit: str = "rows") -> None:
        self.job = job
        self._done = done
        self._progress = Progress(job, conf.get_float("log.progress.interval"), logger=log)
        redraw = conf.get_float("fetcher.progress.interval")
        self._tick = redraw if self._progress.tty else max(0.05, min(redraw, conf.get_float("log.progress.interval")))
        self._phase = (phase, unit, done(), Window())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"progress-{job}", daemon=True)
        self._thread.start()

    def phase(self, name: str, unit: str) -> None:
        self._phase = (name, unit, self._done(), Window())

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._progress.done()

    def line(self) -> str:
        name, unit, base, window = self._phase
        n = self._done() - base
        rate, avg = window.rates(n)
        stuck = hangs.summary()  # a plugin that never returns holds the job: say which, and on what
        return f"{self.job}: {name}: {n} {unit}, {rate[0]:.1f} {unit}/s ({avg[0]:.1f} avg)" + \
            (f"; {stuck}" if stuck else "")

    def _watch(self) -> None:
        while not self._stop.wait(self._tick):
            self._progress.update(self.line())
