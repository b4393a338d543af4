"""Task leases: one attempt at a time per fetch task, where a runner may run a task twice (Spark).

A fetch task owns its hosts (the fetch job partitions URLs by a stable hash of their queue id), so one attempt
per task at a time is one fetcher per host queue at a time. Spark can break that: a stage re-run after a lost
executor starts a new attempt while the old stage's attempt of the same task still runs, and a speculative
attempt runs beside the original. The lease is a small record in the store's crawl state (DataStore
get_state/put_state), `fetch-lease/<batch>/<task>`:

    {"run": fetch run id, "attempt": attempt id, "beat": n, "state": "held" | "released", "delay": s}

- an attempt takes it only when no other attempt holds it: a held record must stay unchanged for
  fetcher.lease.timeout seconds (the holder renews it every timeout/5) before it counts as dead; a record of an
  earlier run of the batch (its driver is gone) counts as dead after two renewal intervals without a change;
- the holder checks before each request that it renewed the lease within timeout/2 and that the record is still
  its own, and stops (TaskLeaseLost) otherwise — so it stops well before anyone may take its hosts over;
- taking over from a released or dead holder, the new attempt first waits the holder's largest queue delay
  (`delay`: fetcher.server.delay or a robots.txt Crawl-delay), measured from when it saw the holder go, so no host
  sees two requests closer than its delay across attempts;
- `rerun` says an earlier attempt of the same run had the task: its items must be checked against the store
  (claims, nutch2/fetch/fetchclaim.py) before they are fetched;
- two attempts that write the record at once both read it back after a moment; only the last writer keeps it.

The store offers no compare-and-set here, so exclusion rests on time (writes visible within `settle` seconds,
clocks that run at the same rate); each attempt measures with its own monotonic clock only, never another
machine's wall clock. The driver deletes a batch's records when its fetch job ends (clear_leases).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from nutch2.errors import StoreError
from nutch2.stores.base import DataStore

PREFIX = "fetch-lease/"


class TaskLeaseLost(StoreError):
    """Another attempt took this task over, or this attempt could not renew its lease in time."""


def lease_prefix(batch: str) -> str:
    return f"{PREFIX}{batch}/"


def clear_leases(store: DataStore, batch: str) -> None:
    """Delete the batch's lease records (the driver, after the fetch job ended)."""
    for name in store.states(lease_prefix(batch)):
        if name.startswith(lease_prefix(batch)):
            store.put_state(name, None)


class TaskLease:
    """The lease of one fetch task of one batch, for one attempt."""

    def __init__(self, store: DataStore, batch: str, task: int, run: str, attempt: str, timeout: float,
                 log: Callable[[str], None], settle: float = 0.2) -> None:
        self.store = store
        self.batch = batch
        self.name = f"{lease_prefix(batch)}{task}"
        self.task = task
        self.run = run
        self.attempt = attempt
        self.timeout = max(1.0, timeout)
        self.interval = self.timeout / 5
        self.settle = settle
        self.log = log
        self.delay_of: Callable[[], float] | None = None  # this attempt's largest queue delay, for a successor
        self.rerun = False
        self.lost = False
        self._beat = 0
        self._renewed = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- taking it
    def acquire(self) -> TaskLease:
        """Wait until no other attempt holds the task, take it, and wait out its last holder's delay."""
        seen: dict[str, tuple[str, float]] = {}
        waited = False
        while True:
            holders, polite = self._holders(seen)
            if holders:
                if not waited:
                    self.log(f"fetch: task {self.task}: waiting for {', '.join(holders)} to finish or time out "
                             f"(fetcher.lease.timeout={self.timeout:g} s) before fetching its hosts")
                    waited = True
                time.sleep(self.interval / 2)
                continue
            self._write("held")
            time.sleep(self.settle)
            if self._mine():
                break
            seen.clear()  # someone wrote after us: they hold it; wait for them
        self._renewed = time.monotonic()
        if polite > 0:
            time.sleep(polite)
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease {self.name}", daemon=True)
        self._thread.start()
        return self

    def _holders(self, seen: dict[str, tuple[str, float]]) -> tuple[list[str], float]:
        """Other attempts that may still fetch this task's hosts, and the delay to wait after those gone."""
        now = time.monotonic()
        holders: list[str] = []
        polite = 0.0
        for name, raw in self.store.states(lease_prefix(self.batch)).items():
            if not name.startswith(lease_prefix(self.batch)):
                continue
            rec = _parse(raw)
            if rec is None or rec.get("attempt") == self.attempt:
                continue
            same_run = rec.get("run") == self.run
            if same_run and name != self.name:
                continue  # another task of this run: other hosts
            if same_run:
                self.rerun = True
            delay = float(rec.get("delay") or 0.0)
            if rec.get("state") != "held":
                polite = max(polite, delay)
                continue
            who = f"attempt {rec.get('attempt')}" + ("" if same_run else " of an earlier fetch of the batch")
            first = seen.get(name)
            if first is None or first[0] != raw:
                seen[name] = (raw, now)
                holders.append(who)
                continue
            if now - first[1] < (self.timeout if same_run else 2 * self.interval):
                holders.append(who)
            else:
                polite = max(polite, delay)  # it died (no renewal): its last request may be just before that
        return holders, polite

    def _mine(self) -> bool:
        rec = _parse(self.store.get_state(self.name))
        return rec is not None and rec.get("attempt") == self.attempt

    def _write(self, state: str) -> None:
        self._beat += 1
        delay = self.delay_of() if self.delay_of is not None else 0.0
        self.store.put_state(self.name, json.dumps({"run": self.run, "attempt": self.attempt, "beat": self._beat,
                                                    "state": state, "delay": delay}))

    # ---------------------------------------------------------------- holding it
    def _renew_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if not self._mine():
                    self.lost = True
                    return
                self._write("held")
                self._renewed = time.monotonic()
            except Exception:  # noqa: BLE001 - the store may be away for a moment; check() stops the fetch in time
                continue

    def check(self) -> None:
        """Before a request: raise TaskLeaseLost unless this attempt surely still holds the task."""
        if self.lost:
            raise TaskLeaseLost(f"fetch: task {self.task}: another attempt took its hosts over; this attempt stops")
        if time.monotonic() - self._renewed > self.timeout / 2:
            raise TaskLeaseLost(f"fetch: task {self.task}: its lease could not be renewed for "
                                f"{self.timeout / 2:g} s (store unreachable?); this attempt stops")

    def release(self) -> None:
        """Give the task back once no request of this attempt is in flight (told: the delay to keep)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout)
        if not self.lost and self._mine():
            self._write("released")


def _parse(raw: str | None) -> dict | None:
    if raw is None:
        return None
    try:
        rec = json.loads(raw)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


__all__ = ["TaskLease", "TaskLeaseLost", "clear_leases", "lease_prefix"]
