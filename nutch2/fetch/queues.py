"""The fetch queues of one fetch task, as Nutch's FetchItemQueues: one queue per host (or domain or IP, by
fetcher.queue.mode) with its politeness state; fetcher threads block in get() until a queue may be asked again.

A queue's delay is fetcher.server.delay (or the host's robots.txt Crawl-delay, or the adaptive delay), raised by
the back-off its answers earned (nutch2/fetch/politeness.py: 429, 503, Retry-After, failures); with
fetcher.threads.per.ip, requests in flight to one address are capped across the queues of every host on it."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from nutch2.config import Configuration
from nutch2.fetch.politeness import Feedback, Kind, Politeness
from nutch2.urls.checker import queue_id

log = logging.getLogger(__name__)
_NO_ITEMS: deque = deque()  # the (empty) items of every retired queue: one deque, not one per host; _queue() gives
# a revived queue its own (a retired queue is reachable only through _queue())


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
    # the fetch task's own, not pickled: requests of a 429/503 asked again, the claim made (nutch2/fetch/fetchclaim.py:
    # a request asked again is the same claim's work), the address whose fetcher.threads.per.ip slot it holds
    retries: int = 0
    claimed: bool = False
    probe: bool = False  # the first request to a host whose robots.txt an earlier task kept (no answer: host down)
    ip: str | None = None

    def __reduce__(self):  # type: ignore[no-untyped-def]
        """Pickled as its values (a slots dataclass pickles through fields(), slowly: a batch's items cross the
        shuffle)."""
        return FetchItem, (self.key, self.url, self.markers, self.fetch_time, self.modified_since, self.etag,
                           self.queue, self.done, self.metadata, self.signature, self.repr_url, self.parsed,
                           self.robots_only)


@dataclass(slots=True)
class FetchItemQueue:
    """URLs of one host (or domain/IP) with its politeness state."""

    qid: str
    crawl_delay: float  # fetcher.server.delay, or the host's robots.txt Crawl-delay
    min_delay: float
    max_threads: int
    items: deque[FetchItem] = field(default_factory=deque)
    in_progress: int = 0
    next_fetch: float = 0.0  # monotonic time before which no request may start
    robots_delay: float = 0.0  # the host's robots.txt Crawl-delay: no delay of it is shorter
    adaptive: float | None = None  # fetcher.server.delay.adaptive: the delay its latency earned
    backoff: float = 0.0  # the wait its 429/503 answers asked for or its failures earned; halves after a success
    failures: int = 0  # failed requests in a row (the exponential back-off)
    exceptions: int = 0  # failed requests in this fetch (fetcher.max.exceptions.per.queue)
    retried: int = 0  # its requests answered 429 or 503 and asked again
    longest: float = 0.0  # the longest back-off it had, for the task's log
    dropped: tuple[str, str] | None = None  # (counter, reason): its URLs are recorded RETRY without a request
    ip: str | None = None  # the address its requests go to (fetcher.threads.per.ip), once one request looked

    def ready(self, now: float) -> bool:
        return bool(self.items) and self.in_progress < self.max_threads and now >= self.next_fetch

    def base_delay(self) -> float:
        """The delay between two requests without back-off."""
        if self.max_threads > 1:
            return self.min_delay
        if self.adaptive is not None:
            return max(self.adaptive, self.robots_delay)
        return self.crawl_delay

    def delay(self) -> float:
        """Seconds from the end of one request to the start of the next: the base delay or the back-off."""
        return max(self.base_delay(), self.backoff)


class FetchItemQueues:
    """All queues of one reducer. Fetcher threads block in get() until a queue is ready (no fixed sleeps).

    One waiting thread at a time is the timer: it sleeps until the earliest queue's next fetch time and is
    woken when that time changes. The others sleep until there is work, so a ready queue wakes one thread,
    not all of them (no thundering herd: the politeness-bound rate stays close to hosts / delay).
    """

    def __init__(self, conf: Configuration, per_ip: bool = False) -> None:
        """`per_ip`: cap the requests in flight per address at fetcher.threads.per.ip; the taker of an item whose
        queue's address is not known yet looks it up and says it with locate() before any request."""
        self.policy = Politeness.from_conf(conf)
        self.crawl_delay = self.policy.server_delay
        self.min_delay = self.policy.min_delay
        self.max_threads = max(1, conf.get_int("fetcher.threads.per.queue"))
        self.ip_cap = self.policy.threads_per_ip if per_ip else 0  # requests in flight per address; 0: no cap
        self.ip_busy: dict[str, int] = {}  # address -> requests in flight (with ip_cap)
        self.mode = conf.get_str("fetcher.queue.mode")
        queue_id("http://x/", self.mode)  # validate the mode up front
        self.queues: dict[str, FetchItemQueue] = {}
        self.retired: dict[str, FetchItemQueue] = {}  # emptied queues, kept for their politeness state
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
            q = self.retired.pop(qid, None)  # the host was emptied earlier: its politeness state goes on
            if q is not None:
                q.items = deque()
            else:
                q = FetchItemQueue(qid, self.crawl_delay, self.min_delay, self.max_threads,
                                   adaptive=self.crawl_delay if self.policy.adaptive else None)
            self.queues[qid] = q
        return q

    def _settle(self, q: FetchItemQueue) -> None:
        """Retire a queue with nothing waiting or in flight, keeping its politeness state (lock held)."""
        if not q.items and not q.in_progress and self.queues.get(q.qid) is q:
            del self.queues[q.qid]
            q.items = _NO_ITEMS
            self.retired[q.qid] = q

    @staticmethod
    def _space(q: FetchItemQueue) -> None:
        """A request of `q` ended now: its next one waits the queue's delay (never earlier than a wait already
        set: a host's Retry-After holds whatever its other requests in flight answer)."""
        q.next_fetch = max(q.next_fetch, time.monotonic() + q.delay())

    def set_crawl_delay(self, q: FetchItemQueue, delay: float) -> None:
        """The host's robots.txt asked for `delay` seconds between requests: one request at a time, delay apart."""
        with self.lock:
            q.crawl_delay = q.robots_delay = delay
            q.max_threads = 1

    def requested(self, q: FetchItemQueue) -> None:
        """A request was made through the slot the caller holds in `q`: the queue's next request waits its delay
        (a rendered page's own resources wait after the page)."""
        with self.lock:
            self._space(q)

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
            self._space(q)
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
            if q.dropped is not None and q.items:  # recorded without a request: no politeness to wait for
                return self._pop(q, None), None
            room = self._ip_room(q)
            if room and q.ready(now):
                return self._pop(q, q.ip if self.ip_cap else None), None
            if room and q.items and q.in_progress < q.max_threads:
                wake = q.next_fetch if wake is None else min(wake, q.next_fetch)
        return None, wake

    def _pop(self, q: FetchItemQueue, ip: str | None) -> tuple[FetchItem, FetchItemQueue]:
        """Take the queue's next item into a slot (and the slot of address `ip`, when given)."""
        item = q.items.popleft()
        q.in_progress += 1
        self.total -= 1
        if ip is not None:
            self.ip_busy[ip] = self.ip_busy.get(ip, 0) + 1
            item.ip = ip
        return item, q

    def _ip_room(self, q: FetchItemQueue) -> bool:
        """fetcher.threads.per.ip lets the queue start a request: its address has a free slot, or (not known yet)
        none of its requests is in flight (the one taken learns the address: locate())."""
        if not self.ip_cap:
            return True
        if q.ip is None:
            return q.in_progress == 0
        return self.ip_busy.get(q.ip, 0) < self.ip_cap

    def locate(self, item: FetchItem, q: FetchItemQueue, ip: str) -> bool:
        """The address of the queue of an item taken before it was known: True when the item got a slot of that
        address; False when the address is at fetcher.threads.per.ip (the item is back in its queue, first)."""
        with self.lock:
            q.ip = ip
            if item.ip is None and self.ip_busy.get(ip, 0) < self.ip_cap:
                self.ip_busy[ip] = self.ip_busy.get(ip, 0) + 1
                item.ip = ip
                return True
            if item.ip is not None:
                return True
            self._release(item, q, requested=False, requeue=True)
            return False

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
            if not item.done:
                self._release(item, q, requested, requeue)

    def answered(self, item: FetchItem, q: FetchItemQueue, fb: Feedback) -> tuple[bool, list[FetchItem]]:
        """Release the slot of an item whose request was answered (or failed), after learning from the answer what
        the host's politeness state becomes (the back-off, the adaptive delay, the exceptions). Returns whether
        the item was put back to be asked again (a 429 or 503 with retries left: no outcome yet), and the host's
        waiting items when this answer dropped the host for this fetch (their outcome is RETRY, q.dropped)."""
        with self.lock:
            if item.done:
                return False, []
            retry = self._learn(item, q, fb)
            dropped: list[FetchItem] = []
            if q.dropped is not None and q.items:
                dropped = list(q.items)
                q.items.clear()
                self.total -= len(dropped)
            self._release(item, q, requested=True, requeue=retry)
            return retry, dropped

    def _learn(self, item: FetchItem, q: FetchItemQueue, fb: Feedback) -> bool:
        """The host's state after an answer (lock held); True when the item is to be asked again."""
        policy = self.policy
        if fb.kind is Kind.OK:
            q.failures = 0
            if q.backoff:  # decays: halved after each success, gone once within the host's own delay
                q.backoff = q.backoff / 2 if q.backoff / 2 > q.base_delay() else 0.0
            if q.adaptive is not None:
                q.adaptive = policy.adapted(q.adaptive, fb)
            return False
        if fb.kind is Kind.NONE or q.dropped is not None:
            return False
        q.failures += 1
        q.exceptions += 1
        if fb.asked is not None and policy.too_long(fb.asked):
            q.dropped = ("retry_after_too_long",
                         f"Retry-After {fb.asked:g} s exceeds fetcher.max.crawl.delay: left for a later round")
            log.info("fetch: %s asked for %g s between requests (Retry-After), more than fetcher.max.crawl.delay: "
                     "its URLs are left for a later round", q.qid, fb.asked)
            return False
        # a Retry-After is the host's own word on when to ask again: waited as said, not grown; without one the
        # back-off doubles with each failure in a row
        q.backoff = fb.asked if fb.asked is not None else max(q.backoff, policy.failure_delay(q.failures))
        q.longest = max(q.longest, q.backoff)
        for limit, count, counter, what, key in (  # a host that keeps failing is left for a later round
                (policy.max_exceptions, q.exceptions, "above_exception_threshold", "failed requests",
                 "fetcher.max.exceptions.per.queue"),
                (policy.max_failures_in_row, q.failures, "failures_in_row", "failed requests in a row",
                 "fetcher.max.failures.in.row.per.queue")):
            if 0 <= limit <= count:
                q.dropped = (counter, f"{count} {what} to the host ({key}): left for a later round")
                log.info("fetch: %s dropped after %d %s (%s): its URLs are left for a later round", q.qid, count,
                         what, key)
                return False
        if fb.kind is Kind.THROTTLED and item.retries < policy.retry_max:
            item.retries += 1
            q.retried += 1
            return True
        return False

    def _release(self, item: FetchItem, q: FetchItemQueue, requested: bool, requeue: bool) -> None:
        """Give back the item's slot (and its address slot); put it back first in its queue with `requeue`, else it
        is done (lock held)."""
        q.in_progress -= 1
        if item.ip is not None:
            left = self.ip_busy.get(item.ip, 1) - 1
            if left > 0:
                self.ip_busy[item.ip] = left
            else:
                self.ip_busy.pop(item.ip, None)
            item.ip = None
        if requested:
            self._space(q)
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

    def hosts(self) -> list[FetchItemQueue]:
        """Every queue of the task, the retired ones too (for the per-host figures)."""
        with self.lock:
            return [*self.queues.values(), *self.retired.values()]

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

