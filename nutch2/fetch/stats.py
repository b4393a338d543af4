"""The fetch task's progress line: pages, errors, bytes and active threads, with rates over the last 30 s and
since the start."""

from __future__ import annotations

import threading

from nutch2.logs import Window, counted
from nutch2.mapred import clock


class FetchStats:
    """Pages, errors, bytes and active threads for the progress line: rates over the last 30 s and since the
    start (logs.Window)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pages = 0
        self.errors = 0
        self.bytes = 0
        self.active = 0
        self.started = clock.now()  # the fetcher's clock (nutch2/mapred/clock.py), as its rates and limits
        self._window = Window()

    def begin(self) -> None:
        with self.lock:
            self.active += 1

    def end(self) -> None:
        with self.lock:
            self.active -= 1

    def add(self, nbytes: int, failed: bool = False) -> None:
        with self.lock:
            self.pages += 1
            self.bytes += nbytes
            if failed:
                self.errors += 1

    def error(self) -> None:
        with self.lock:
            self.errors += 1

    def rate_bytes(self) -> float:
        return self.bytes / 1024 / max(1e-6, clock.now() - self.started)

    def line(self, threads: int, queued: int, queues: int) -> str:
        """One progress line: counts, then (once a page was fetched) pages/s and kB/s over the window and since the
        start."""
        with self.lock:
            pages, nbytes, errors, active = self.pages, self.bytes, self.errors, self.active
        window, since_start = self._window.rates(pages, nbytes / 1024)
        (rate, kbs), (avg, kb_avg) = window, since_start
        speed = f"{rate:.1f} pages/s ({avg:.1f} avg), {_kb(kbs)} kB/s ({_kb(kb_avg)} avg), " if pages else ""
        return (f"fetch: {counted(pages, 'page')}, {counted(errors, 'error')}, {speed}{active}/{threads} threads "
                f"active, {queued} queued in {counted(queues, 'queue')}")


def _kb(rate: float) -> str:
    """kB/s for the progress line: one decimal below 1 (a slow polite fetch is not 0 kB/s)."""
    return f"{rate:.1f}" if rate < 1 else f"{rate:.0f}"

