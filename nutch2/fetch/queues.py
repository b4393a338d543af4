"""The fetch queues of one fetch task, as Nutch's FetchItemQueues: one queue per host (or domain or IP, by
fetcher.queue.mode) with its politeness state; fetcher threads block in get() until a queue may be asked again."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from nutch2.config import Configuration
from nutch2.urls.checker import queue_id


@dataclass(slots=True)
class FetchItem:
    """One URL to fetch, with what the fetcher needs from its row."""

    key: str
    url: str
    markers: dict[str, str]
    fetch_time: int
    modified_since: int | None
    etag: str | None
    queue: str = ""
    done: bool = False  # its queue slot was released
    metadata: dict[str, bytes] = field(default_factory=dict)  # the row's metadata (OPIC cash, flags): kept
    signature: bytes | None = None  # the row's signature: prevSignature when fetcher.parse parses inline
    repr_url: str | None = None  # issue 15: the row's repr URL, cleared when the page no longer redirects
    parsed: bool = False  # the row's last parse succeeded (a 304 keeps it with fetcher.parse)
    # only the host's robots.txt is wanted (sitemap discovery): once its rules are known the output gets
    # (item, SUCCESS, [], None) and no request is made for the item itself; the rules are robots.cached(url)
    robots_only: bool = False

    def __reduce__(self):  # type: ignore[no-untyped-def]
        """Pickled as its values (a slots dataclass pickles through fields(), slowly: a batch's items cross the
        shuffle)."""
        return FetchItem, (self.key, self.url, self.markers, self.fetch_time, self.modified_since, self.etag,
                           self.queue, self.done, self.metadata, self.signature, self.repr_url, self.parsed,
                           self.robots_only)


@dataclass
class FetchItemQueue:
    """URLs of one host (or domain/IP) with its politeness state."""

    qid: str
    crawl_delay: float
    min_delay: float
    max_threads: int
    items: deque[FetchItem] = field(default_factory=deque)
    in_progress: int = 0
    next_fetch: float = 0.0  # monotonic time before which no request may start

    def ready(self, now: float) -> bool:
        return bool(self.items) and self.in_progress < self.max_threads and now >= self.next_fetch

    def delay(self) -> float:
        return self.min_delay if self.max_threads > 1 else self.crawl_delay


class FetchItemQueues:
    """All queues of one reducer. Fetcher threads block in get() until a queue is ready (no fixed sleeps).

    One waiting thread at a time is the timer: it sleeps until the earliest queue's next fetch time and is
    woken when that time changes. The others sleep until there is work, so a ready queue wakes one thread,
    not all of them (no thundering herd: the politeness-bound rate stays close to hosts / delay).
    """

    def __init__(self, conf: Configuration) -> None:
        self.crawl_delay = conf.get_float("fetcher.server.delay")
        self.min_delay = conf.get_float("fetcher.server.min.delay")
        self.max_threads = max(1, conf.get_int("fetcher.threads.per.queue"))
        self.mode = conf.get_str("fetcher.queue.mode")
        queue_id("http://x/", self.mode)  # validate the mode up front
        self.queues: dict[str, FetchItemQueue] = {}
        self.retired: dict[str, tuple[float, float, int]] = {}  # emptied queue -> (next_fetch, delay, threads)
        self.lock = threading.Lock()
        self.timer_cond = threading.Condition(self.lock)  # the one thread waiting for a next-fetch time
        self.idle_cond = threading.Condition(self.lock)  # threads waiting for work
        self.room_cond = threading.Condition(self.lock)  # the feeder waiting for room
        self.slot_cond = threading.Condition(self.lock)  # resource requests waiting for a queue's politeness
        self.timer = False
        self.total = 0
        self.feeding = True
        self.aborted = False

    def _changed(self) -> None:
        """A queue got items or a new next-fetch time: the timer recomputes, or an idle thread looks."""
        self.timer_cond.notify()
        if not self.timer:
            self.idle_cond.notify()

    def _wake_all(self) -> None:
        self.timer_cond.notify_all()
        self.idle_cond.notify_all()
        self.room_cond.notify_all()
        self.slot_cond.notify_all()

    def add(self, item: FetchItem) -> None:
        item.queue = queue_id(item.url, self.mode)
        with self.lock:
            q = self._queue(item.queue)
            q.items.append(item)
            self.total += 1
            self._changed()

    def _queue(self, qid: str) -> FetchItemQueue:
        """The queue `qid`, made when missing (lock held)."""
        q = self.queues.get(qid)
        if q is None:
            q = self.queues[qid] = FetchItemQueue(qid, self.crawl_delay, self.min_delay, self.max_threads)
            if qid in self.retired:  # the host was emptied earlier: keep its politeness state
                q.next_fetch, q.crawl_delay, q.max_threads = self.retired.pop(qid)
        return q

    def _settle(self, q: FetchItemQueue) -> None:
        """Retire a queue with nothing waiting or in flight, keeping its politeness state (lock held)."""
        if not q.items and not q.in_progress and self.queues.get(q.qid) is q:
            del self.queues[q.qid]
            self.retired[q.qid] = (q.next_fetch, q.crawl_delay, q.max_threads)

    def set_crawl_delay(self, q: FetchItemQueue, delay: float) -> None:
        """The host's robots.txt asked for `delay` seconds between requests: one request at a time, delay apart."""
        with self.lock:
            q.crawl_delay = delay
            q.max_threads = 1

    def requested(self, q: FetchItemQueue) -> None:
        """A request was made through the slot the caller holds in `q`: the queue's next request waits its delay
        (a rendered page's own resources wait after the page)."""
        with self.lock:
            q.next_fetch = time.monotonic() + q.delay()

    def acquire(self, url: str, until: float, held: FetchItemQueue | None = None) -> FetchItemQueue | None:
        """A slot in the queue of `url` for a request that is none of the queues' items (a resource of a rendered
        page), once the queue's politeness allows it, as for its items; `held` is the queue whose slot the caller
        holds already (its page's), used as it is. None when the request could not start before `until` (the
        queue's next request is later, or its slots stay busy) or the fetch was aborted. Give it back with
        release()."""
        qid = queue_id(url, self.mode)
        with self.lock:
            while not self.aborted:
                q = self._queue(qid)
                own = held is q
                now = time.monotonic()
                free = own or q.in_progress < q.max_threads
                if free and now >= q.next_fetch:
                    if not own:
                        q.in_progress += 1
                    return q
                start = q.next_fetch if free else now
                if start >= until or now >= until:  # cannot be spaced within the time it has
                    self._settle(q)
                    return None
                self.slot_cond.wait((start if free else until) - now)
            return None

    def release(self, q: FetchItemQueue, held: bool) -> None:
        """The request of an acquire() is done (`held`: made in the caller's own slot): the queue's next request
        waits its delay."""
        with self.lock:
            if not held:
                q.in_progress -= 1
            q.next_fetch = time.monotonic() + q.delay()
            self._settle(q)
            self.slot_cond.notify_all()
            if self.total == 0 and not self.feeding and not self._busy():
                self._wake_all()
            else:
                self._changed()

    def size(self) -> int:
        with self.lock:
            return self.total

    def wait_below(self, capacity: int) -> None:
        """The feeder blocks here while the queues hold `capacity` items."""
        with self.lock:
            while self.total >= capacity and not self.aborted:
                self.room_cond.wait(0.5)

    def done_feeding(self) -> None:
        with self.lock:
            self.feeding = False
            self._wake_all()

    def _take(self, now: float) -> tuple[tuple[FetchItem, FetchItemQueue] | None, float | None]:
        """A ready item, else the earliest time a queue with items will be ready (None: none waits)."""
        wake: float | None = None
        for q in self.queues.values():
            if q.ready(now):
                item = q.items.popleft()
                q.in_progress += 1
                self.total -= 1
                return (item, q), None
            if q.items and q.in_progress < q.max_threads:
                wake = q.next_fetch if wake is None else min(wake, q.next_fetch)
        return None, wake

    def get(self) -> tuple[FetchItem, FetchItemQueue] | None:
        """Next item whose queue allows a request now; None when everything is done."""
        with self.lock:
            while True:
                if self.aborted:
                    return None
                now = time.monotonic()
                got, wake = self._take(now)
                if got is not None:
                    self.room_cond.notify()
                    self.idle_cond.notify()  # more may be ready, or someone must become the timer
                    return got
                if self.total == 0 and not self.feeding and not self._busy():
                    self._wake_all()
                    return None
                if wake is not None and not self.timer:
                    self.timer = True
                    try:
                        self.timer_cond.wait(max(0.0, wake - now) + 0.0005)
                    finally:
                        self.timer = False
                else:
                    self.idle_cond.wait(1.0)  # the timeout only guards against a lost wake-up

    def _busy(self) -> bool:
        return any(q.in_progress for q in self.queues.values())

    def finish(self, item: FetchItem, q: FetchItemQueue, requested: bool = True, requeue: bool = False) -> None:
        """Release the item's slot; the queue's next request waits its delay when a request was made."""
        with self.lock:
            if item.done:
                return
            q.in_progress -= 1
            if requested:
                q.next_fetch = time.monotonic() + q.delay()
            if requeue:
                q.items.appendleft(item)
                self.total += 1
            else:
                item.done = True
            self._settle(q)
            self.slot_cond.notify_all()
            if self.total == 0 and not self.feeding and not self._busy():
                self._wake_all()  # the last item: every waiting thread can end
            else:
                self._changed()

    def drop_queue(self, q: FetchItemQueue, match: Callable[[FetchItem], bool]) -> list[FetchItem]:
        """Remove the waiting items of a queue that ``match`` (those of a deferred or unreachable host: a queue
        may hold several ports of one host); returns them."""
        with self.lock:
            dropped = [item for item in q.items if match(item)]
            if dropped:
                q.items = deque(item for item in q.items if not match(item))
                self.total -= len(dropped)
                self._wake_all()
            return dropped

    def abort(self) -> int:
        """Empty every queue (time limit or throughput abort); returns the items dropped."""
        with self.lock:
            n = self.total
            for q in self.queues.values():
                q.items.clear()
            self.total = 0
            self.aborted = True
            self._wake_all()
            return n

