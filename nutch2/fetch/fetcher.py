"""The fetch engine of one fetch task, as Nutch 2's FetcherReducer: a QueueFeeder thread fills FetchItemQueues
(one queue per host, domain or IP) from the task's items while fetcher threads take ready items, check
robots.txt and fetch them politely; a watcher shows progress and applies the time limit and the throughput
threshold. What a fetch gives is handed to the caller's output function (the fetch job turns it into a row).

Each answer also tells the host's queue how to go on (nutch2/fetch/politeness.py): a 429 or 503 puts the URL back
to be asked again after the wait the host asked for, failures back the host off, and a host that asks for too long
a wait or fails too often is dropped for this fetch (its URLs recorded RETRY, for a later round).

Nutch's guard against hung threads is kept: when requests are in flight but none began or ended for
mapreduce.task.timeout / fetcher.threads.timeout.divisor (5 minutes), the fetch ends without the threads that hold
them ("aborting with N hung threads"): their URLs keep their claims and are requested again by `fetch -resume`, an
outcome a hung thread brings later is dropped, and a worker process that ran the task is replaced after it. A thread
recording an outcome (a sitemap's URLs, an inline parse) is busy, not hung: it is waited for.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Protocol
from urllib.parse import urlsplit

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError, StoreError
from nutch2.fetch.addresses import DENIED, AddressPolicy
from nutch2.fetch.dns import is_dns_failure
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.politeness import HostAddresses, Politeness, feedback
from nutch2.fetch.protocols import ProtocolSession, protocol_for
from nutch2.fetch.queues import FetchItem, FetchItemQueue, FetchItemQueues
from nutch2.fetch.renderhosts import RenderHosts
from nutch2.fetch.robots import DEFER, UNREACHABLE, RobotRules, RobotsCache, robot_agents
from nutch2.fetch.robotsstore import robots_store
from nutch2.fetch.stats import FetchStats
from nutch2.fetch.watchdog import WATCHDOG
from nutch2.logs import Progress
from nutch2.mapred import clock, hangs, measures, stop, timebox
from nutch2.mapred.memory import release_memory
from nutch2.status import ProtocolStatusCode
from nutch2.stores.base import DataStore
from nutch2.urls.checker import UrlChecker, queue_id

log = logging.getLogger(__name__)
_TRIM_EVERY = 30.0  # seconds between heap trims during a fetch
MAX_FETCHER_THREADS = 1000  # per fetch task; each thread holds a pooled HTTP session and its queue share


class Counting(Protocol):
    def incr(self, name: str, n: int = 1) -> None: ...


# output(item, protocol status code, args, what the server sent or None): record one URL's outcome
Output = Callable[[FetchItem, int, list[str], "ProtocolOutput | None"], None]
# claim(item): make durable that the item's request is about to be sent (raises StoreError to stop the task)
Claim = Callable[[FetchItem], None]


def fetcher_threads(conf: Configuration, threads: int | None = None) -> int:
    """Fetcher threads per task: ``-threads`` if given, else fetcher.threads.fetch; 1..MAX_FETCHER_THREADS."""
    n = conf.get_int("fetcher.threads.fetch") if threads is None else threads
    if not 1 <= n <= MAX_FETCHER_THREADS:
        source = f"-threads {n}" if threads is not None else f"fetcher.threads.fetch={n}"
        raise ConfigError(f"{source}: fetcher threads must be between 1 and {MAX_FETCHER_THREADS} per task; "
                          "for more parallelism run more fetch tasks (-numTasks)")
    return n


class Fetcher:
    """Fetches one task's items politely; not reusable (one run)."""

    def __init__(self, conf: Configuration, threads: int, output: Output, counters: Counting,
                 progress: bool | None = None, claim: Claim | None = None,
                 addresses: AddressPolicy | None = None, store: DataStore | None = None) -> None:
        self.conf = conf
        self.threads = threads
        self._output = output
        self.claim = claim  # called right before each page request (robots.txt requests are not claimed)
        self.counters = counters
        # product tokens matched in robots.txt, in order of precedence (http.agent.name, then http.robots.agents)
        self.robots_agent = robot_agents(conf.get_str("http.agent.name"), conf.get_str("http.robots.agents"))
        timelimit = conf.get_float("fetcher.timelimit.mins")
        self.deadline = clock.now() + timelimit * 60 if timelimit > 0 else None  # counts from the task start
        # the address guard every request passes (nutch2/fetch/addresses.py): checked here per URL, and by the
        # protocol on the address it connects to
        self.addresses = addresses if addresses is not None else AddressPolicy.from_conf(conf)
        self.protocol = protocol_for(conf)  # the protocol plugin of http(s): protocol-http, protocol-chromium
        self.protocol.addresses = self.addresses
        self.protocol.render_hosts = RenderHosts(store)  # chromium.mode=auto: hosts kept in the crawl's store
        self.protocol.open(self.deadline, counters)  # requests in flight end at the deadline too
        # robots.txt per host, kept in the crawl's store (`store`) for the tasks and rounds after this one
        self.robots = RobotsCache(self.protocol.robots_session, self.robots_agent, robots_store(conf, store), counters)
        self.politeness = Politeness.from_conf(conf)
        self.host_ips = HostAddresses(self.addresses)  # fetcher.threads.per.ip: each host's address, once per task
        self.capacity = threads * max(1, conf.get_int("fetcher.queue.depth.multiplier"))
        self.queue_mode = conf.get_str("fetcher.queue.mode")
        self.redirect_checker = UrlChecker(conf, "fetcher")
        # a rendered page's resources: normalized and filtered as URLs the fetcher requests, but for their file
        # type (urlfilter-suffix says which types the crawl fetches as pages, not what a page may load)
        self.resource_checker = UrlChecker(conf, "fetcher")
        if self.resource_checker.filters is not None:
            self.resource_checker.filters = self.resource_checker.filters.without("urlfilter-suffix")
        self.throughput_min = conf.get_float("fetcher.throughput.threshold.pages")
        self.throughput_retries = conf.get_int("fetcher.throughput.threshold.retries")
        self.throughput_after = conf.get_float("fetcher.throughput.threshold.check.after")
        self.progress_interval = conf.get_float("fetcher.progress.interval")
        self.log_interval = conf.get_float("log.progress.interval")
        self.progress = progress  # None: a live line on a terminal, a log line every log.progress.interval
        self.fatal: Exception | None = None  # a store or feeder failure, raised after the threads end
        self.stats = FetchStats()
        self._queues: FetchItemQueues | None = None
        self.host_errors: Counter[str] = Counter()  # failed requests per host (the metrics' top hosts)
        self.hosts_top = conf.get_int("metrics.hosts.top")
        self._errors_lock = threading.Lock()
        # Nutch's hung threads: requests in flight with none begun or ended for this long end the fetch without them
        divisor = max(1, conf.get_int("fetcher.threads.timeout.divisor"))
        self.hung_after = conf.get_float("mapreduce.task.timeout") / 1000.0 / divisor
        self._doing: dict[int, tuple[str, float]] = {}  # fetcher thread ident: (URL, since) of its item in hand
        self._recording: set[int] = set()  # threads recording an outcome (busy, not hung: a sitemap's URLs...)
        self._last_activity = clock.now()  # an item begun or ended by any thread
        self._hung: set[threading.Thread] = set()
        self._hung_idents: frozenset[int] = frozenset()

    def output(self, item: FetchItem, code: int, args: list[str], out: ProtocolOutput | None) -> None:
        """Record one URL's outcome; dropped when it comes from a thread the fetch ended without (hung)."""
        me = threading.get_ident()
        if me in self._hung_idents:
            return
        self._recording.add(me)
        try:
            self._output(item, code, args, out)
        finally:
            self._recording.discard(me)

    def close(self) -> None:
        self.robots.close()
        self.protocol.close()
        with self._errors_lock:  # the task's hosts with most errors, the rest as "other": a bounded label set
            for host, n in measures.top_labels(dict(self.host_errors), self.hosts_top).items():
                measures.count(self.counters, "fetch_host_errors", host, n=n)
            self.host_errors.clear()
        if self.addresses.dns.lookups:  # none: a task with nothing to fetch says "nothing done"
            self.counters.incr("dns_lookups", self.addresses.dns.lookups)
        if self.addresses.dns.fallbacks:  # lookups the DNS servers did not answer: socket.getaddrinfo's answers
            self.counters.incr("dns_fallbacks", self.addresses.dns.fallbacks)

    def run(self, items: Iterator[FetchItem]) -> None:
        """Fetch every item; raises the first store or feeder failure after the threads have ended."""
        queues = self._queues = FetchItemQueues(self.conf, per_ip=True)
        feeder = threading.Thread(target=self._feed, args=(items, queues), name="QueueFeeder", daemon=True)
        feeder.start()
        workers = [threading.Thread(target=self._fetch_loop, args=(queues,), name=f"FetcherThread-{i}",
                                    daemon=True) for i in range(self.threads)]
        for w in workers:
            w.start()
        uncount = stop.count_in_flight(lambda: self.stats.active)
        gauges = (measures.Gauge(self.counters, "fetch_queue_items"), measures.Gauge(self.counters, "fetch_queues"),
                  measures.Gauge(self.counters, "fetch_threads", "active"),
                  measures.Gauge(self.counters, "fetch_threads", "total"))
        try:
            self._watch(queues, workers, gauges)
        finally:
            uncount()
            for g in gauges:
                g.close()
        if queues.feeding:  # every fetcher thread died (should not happen): let the feeder drain, not hang
            self.counters.incr("dropped_no_fetcher_threads", queues.abort())
        feeder.join()
        for w in workers:
            if w not in self._hung:
                w.join()
        self._report_hosts(queues)
        if self.fatal is not None:
            raise self.fatal

    def _report_hosts(self, queues: FetchItemQueues, shown: int = 10) -> None:
        """The per-host figures of the back-off: hosts slowed down and dropped (counters), and a log line for each
        of the hosts that failed or throttled most."""
        hosts = [q for q in queues.hosts() if q.exceptions or q.retried]
        if not hosts:
            return
        self.counters.incr("hosts_backed_off", len(hosts))
        if dropped := sum(q.dropped is not None for q in hosts):
            self.counters.incr("hosts_dropped", dropped)
        hosts.sort(key=lambda q: (q.exceptions, q.retried), reverse=True)
        for q in hosts[:shown]:
            log.info("fetch: %s: %d failed or throttled requests, %d asked again, back-off up to %g s%s", q.qid,
                     q.exceptions, q.retried, q.longest, f"; dropped: {q.dropped[1]}" if q.dropped else "")
        if len(hosts) > shown:
            log.info("fetch: ... and %d more hosts backed off", len(hosts) - shown)

    def idle(self) -> bool:
        """No item waits in a queue or is being fetched and no output is running, or the fetch was aborted.

        For a feed that grows from the outputs (sitemaps found in sitemaps): the items iterator, asked for more
        by the feeder, may end once this holds and the outputs gave it nothing new. The order of the reads makes
        it safe: a thread holds its queue slot (busy) from get() until its request is done, and counts as active
        from just after get() until its output has returned, so an item in hand is always seen by one of them.
        """
        queues = self._queues
        if queues is None:
            return False
        if queues.aborted:
            return True
        with queues.lock:
            waiting = queues.total > 0 or queues._busy()
        return not waiting and self.stats.active == 0

    def max_delay(self) -> float:
        """The largest delay between two requests to one queue this run keeps (fetcher.server.delay, or a
        robots.txt Crawl-delay it learnt), for whoever fetches these hosts next."""
        queues = self._queues
        if queues is None:
            return 0.0
        return max([queues.crawl_delay, *(q.delay() for q in queues.hosts())])

    def stop(self) -> None:
        """Drop every queued item and let the threads end (the caller gave up on the run); requests in flight
        end within http.timeout."""
        if self._queues is not None:
            self.counters.incr("dropped_by_stop", self._queues.abort())
            WATCHDOG.shorten(clock.now() + self.conf.get_int("http.timeout") / 1000.0)

    def _feed(self, items: Iterator[FetchItem], queues: FetchItemQueues) -> None:
        try:
            for item in items:
                queues.wait_below(self.capacity)
                if queues.aborted:
                    if stop.requested():  # the rest stays in the batch for -resume: no need to read it
                        break
                    self.counters.incr("dropped_after_abort")
                    continue
                queues.add(item)
        except Exception as e:  # the map output could not be read: stop, and fail the job after the join
            self.fatal = self.fatal or e
            queues.abort()
        finally:
            queues.done_feeding()

    def _host_error(self, url: str) -> None:
        host = urlsplit(url).hostname or "none"
        with self._errors_lock:
            self.host_errors[host] += 1

    def _watch(self, queues: FetchItemQueues, workers: list[threading.Thread],
               gauges: tuple[measures.Gauge, ...] = ()) -> None:
        """Progress, a stop request, the time limit and the throughput threshold; the gauges of the metrics (items
        queued, queues, threads active and in all)."""
        low = 0
        last_check = last_trim = clock.now()
        last_pages = 0
        progress = None if self.progress is False else Progress(
            "fetch", self.log_interval, tty=None if self.progress is None else True, logger=log)
        while any(w.is_alive() for w in workers):
            time.sleep(min(0.2, self.progress_interval))
            now = clock.now()  # the time limit and the rates do not count the time the process was stopped
            for gauge, value in zip(gauges, (queues.size(), len(queues.queues), self.stats.active, self.threads),
                                    strict=False):
                gauge.set(value)
            if now - last_trim >= _TRIM_EVERY:  # a long fetch keeps its RSS at its working set
                release_memory()
                last_trim = now
            if stop.requested() and not queues.aborted:
                self.stop()
            if self.deadline is not None and now >= self.deadline and not queues.aborted:
                self.counters.incr("hit_by_timelimit", queues.abort())
            if 0 < self.hung_after < now - self._last_activity and self.stats.active and self._give_up(
                    queues, workers, now):
                break
            if now - last_check >= self.progress_interval:
                pages = self.stats.pages
                rate = (pages - last_pages) / (now - last_check)
                if progress is not None:
                    stuck = hangs.summary()  # a URL plugin that never returns holds a fetcher thread: name it
                    progress.update(self.stats.line(self.threads, queues.size(), len(queues.queues))
                                    + (f"; {stuck}" if stuck else ""))
                if (self.throughput_min > 0 and now - self.stats.started > self.throughput_after
                        and not queues.aborted):
                    low = low + 1 if rate < self.throughput_min else 0
                    if low > self.throughput_retries:
                        self.counters.incr("hit_by_throughput_threshold", queues.abort())
                last_check, last_pages = now, pages
        if progress is not None:
            progress.done()

    def _give_up(self, queues: FetchItemQueues, workers: list[threading.Thread], now: float) -> bool:
        """End the fetch without the threads whose items began over hung_after ago and are not recording an
        outcome (Nutch's "Aborting with N hung threads"): their URLs keep their claims for -resume, the rest of the
        queues is dropped for later; threads still recording are waited for. False when none is hung."""
        doing, recording = dict(self._doing), set(self._recording)
        hung = [(w, *doing[w.ident]) for w in workers
                if w.is_alive() and w.ident in doing and w.ident not in recording]
        if not hung:
            return False
        self._hung = {w for w, _, _ in hung}
        self._hung_idents = frozenset(w.ident for w in self._hung if w.ident is not None)
        for w in self._hung:
            timebox.leave(w)  # a worker process that ran this task is replaced after it
        self.counters.incr("hung_threads", len(hung))
        if dropped := queues.abort():
            self.counters.incr("hit_by_hung_threads", dropped)
        shown = ", ".join(f"{url} ({now - since:.0f} s)" for _, url, since in hung[:10])
        log.warning(f"fetch: aborting with {len(hung)} hung threads: no request began or ended for "
                    f"{self.hung_after:g} s (mapreduce.task.timeout / fetcher.threads.timeout.divisor); their URLs "
                    f"are left for fetch -resume: {shown}{' ...' if len(hung) > 10 else ''}")
        return True

    def _fetch_loop(self, queues: FetchItemQueues) -> None:
        protocol = self.protocol.session()
        me = threading.get_ident()
        try:
            while True:
                got = queues.get()
                if got is None:
                    return
                item, q = got
                self.stats.begin()
                self._doing[me] = (item.url, self._mark_activity())
                try:
                    self._process(item, q, queues, protocol)
                except StoreError as e:  # the store is gone: stop this reducer, report after the join
                    queues.finish(item, q)
                    self.fatal = self.fatal or e
                    queues.abort()
                except Exception as e:  # noqa: BLE001 - one bad page must not kill the thread
                    queues.finish(item, q)
                    self.counters.incr("errors")
                    self.stats.error()
                    self._host_error(item.url)
                    self._record_error(item, e, queues)
                finally:
                    self.stats.end()
                    self._doing.pop(me, None)
                    self._mark_activity()
        finally:
            protocol.close()

    def _mark_activity(self) -> float:
        now = self._last_activity = clock.now()
        return now

    def _record_error(self, item: FetchItem, error: Exception, queues: FetchItemQueues) -> None:
        """Write the failed item as EXCEPTION (RETRY); when even that fails the row is left for -resume."""
        try:
            self.output(item, ProtocolStatusCode.EXCEPTION, [f"fetcher error: {error}"], None)
        except StoreError as e:
            self.fatal = self.fatal or e
            queues.abort()
        except Exception:  # noqa: BLE001 - the thread must survive to drain its queues
            self.counters.incr("errors_not_recorded")

    def _process(self, item: FetchItem, q: FetchItemQueue, queues: FetchItemQueues, protocol: ProtocolSession) -> None:
        """One item taken from its queue: the address guard, the host's robots.txt (fetched first when new to the
        task), then the request."""
        if stop.requested():  # taken just before the stop: left in the batch for -resume
            queues.finish(item, q, requested=False)
            return
        if q.dropped is not None:  # its host asked for too long a wait or failed too often: for a later round
            queues.finish(item, q, requested=False)
            self._retry_later(item, q.dropped)
            return
        if queues.ip_cap and item.ip is None and not queues.locate(item, q, self.host_ips.address(item.url)):
            return  # its address has fetcher.threads.per.ip requests in flight: back in its queue
        refused = self.addresses.check(item.url)
        if refused:  # this machine's network: no request, robots.txt neither
            queues.finish(item, q, requested=False)
            self.counters.incr("denied_address")
            self.output(item, ProtocolStatusCode.ACCESS_DENIED, [refused], None)
            return
        rules = self.robots.cached(item.url)
        if rules is None:  # first URL of this host: robots.txt is a request too, so wait the delay after it
            rules = self._first_of_host(item, q, queues)
            if rules is None:
                return
        if self._settled_by_robots(item, q, queues, rules):
            return
        probe, item.probe = item.probe, False
        self._request(item, q, queues, protocol, probe=probe)

    def _first_of_host(self, item: FetchItem, q: FetchItemQueue, queues: FetchItemQueues) -> RobotRules | None:
        """Fetch the robots.txt of the item's host (a request in the item's slot). The item is settled here, or
        put back to wait the host's delay (None); the rules are returned when they deny it outright."""
        rules = self.robots.rules_for(item.url)
        if stop.requested():  # robots.txt cut by the stop says nothing about the host
            queues.finish(item, q)
            return None
        delay = self._learn_crawl_delay(q, rules, queues)

        def same_robots(other: FetchItem) -> bool:
            return self.robots.cached(other.url) is rules

        if rules.state == DEFER:
            dropped = queues.drop_queue(q, same_robots)
            queues.finish(item, q)
            for other in (item, *dropped):
                self._defer(other)
        elif rules.state == UNREACHABLE:  # the host is down: each of its URLs is a failed fetch (RETRY)
            dropped = queues.drop_queue(q, same_robots)
            queues.finish(item, q)
            for other in (item, *dropped):
                self._unreachable(other, rules)
        elif item.robots_only:  # the rules were all it wanted; the host's next request waits the delay
            queues.finish(item, q)
            self.output(item, ProtocolStatusCode.SUCCESS, [], None)
        elif delay and self.politeness.too_long(delay):
            return rules  # a Crawl-delay beyond fetcher.max.crawl.delay: refused below
        else:
            # the host's first request waits its delay after robots.txt's, or, when an earlier task kept robots.txt
            # (no request now), after this task's start: a round that follows another at once keeps the spacing
            item.probe = rules.from_store
            queues.finish(item, q, requeue=True)
        return None

    def _settled_by_robots(self, item: FetchItem, q: FetchItemQueue, queues: FetchItemQueues,
                           rules: RobotRules) -> bool:
        """Settle the item without a request where the host's robots.txt says so; False when it may be fetched."""
        refusal: tuple[str, str] | None = None
        if rules.state not in (DEFER, UNREACHABLE) and not item.robots_only:
            refusal = self._robots_refusal(item.url, rules)
            if refusal is None:
                return False
        queues.finish(item, q, requested=False)
        if rules.state == DEFER:
            self._defer(item)
        elif rules.state == UNREACHABLE:
            self._unreachable(item, rules)
        elif item.robots_only:
            self.output(item, ProtocolStatusCode.SUCCESS, [], None)
        elif refusal is not None:
            self.counters.incr(refusal[0])
            self.output(item, ProtocolStatusCode.ROBOTS_DENIED, [refusal[1]], None)
        return True

    def _robots_refusal(self, url: str, rules: RobotRules) -> tuple[str, str] | None:
        """Why robots.txt forbids requesting `url`, as (counter, reason); None when it allows it. The one verdict
        pages, the resources of rendered pages and followed redirects pass."""
        if not rules.allowed(url, self.robots_agent):  # also a deferred or unreachable host's
            return "robots_denied", "disallowed by robots.txt"
        delay = rules.crawl_delay(self.robots_agent)
        if delay and self.politeness.too_long(delay):
            return "robots_denied_crawl_delay", f"Crawl-delay {delay:g} s exceeds fetcher.max.crawl.delay"
        return None

    def _request(self, item: FetchItem, q: FetchItemQueue, queues: FetchItemQueues,
                 protocol: ProtocolSession, probe: bool = False) -> None:
        """Claim the item, request it (rendering it where the protocol renders pages) and record the outcome, or put
        it back to be asked again (429, 503: its host's queue waits what the host asked). ``probe``: the host's
        first request of the task, its robots.txt kept by an earlier one: when it gets no answer at all, the host's
        other URLs are settled as those of a host whose robots.txt got none."""
        retry, dropped, released, down = False, [], False, None
        try:
            if self.claim is not None and not item.claimed:
                self.claim(item)
                item.claimed = True  # asked again after a 429 or 503, it is this claim's work (no second claim)
            asked = clock.now()
            out = protocol.fetch(item.url, modified_since_ms=item.modified_since, etag=item.etag,
                                 may_follow=lambda target: self._may_follow(target, q))
            latency = clock.now() - asked
            if probe and out.code == ProtocolStatusCode.EXCEPTION and out.http_code is None and not out.stopped:
                down = self.robots.unreachable(item.url, out.args[0] if out.args else "no response")
            if self.protocol.renders(item.url, out):
                # the queue slot is held while the page renders; its resources take their turn in their hosts'
                # queues (this one's after the page's own request)
                queues.requested(q)
                out = self.protocol.render(item.url, out,
                                           lambda url, until: self._resource(url, until, q, queues, protocol))
            if not out.stopped:
                retry, dropped = queues.answered(item, q, feedback(out))
                released = True
        finally:
            if not released:
                queues.finish(item, q)
        if out.stopped:  # cut by fetcher.timelimit.mins or a stop: not an outcome of this URL; left for later
            self.counters.incr("stopped_in_flight" if stop.requested() else "hit_by_timelimit")
            return
        self.stats.add(len(out.content), failed=out.code == ProtocolStatusCode.EXCEPTION)
        self.counters.incr("bytes", len(out.content))
        measures.observe(self.counters, "fetch_latency", latency)
        measures.count(self.counters, "fetch_http", out.http_code or "none")
        if out.code == ProtocolStatusCode.EXCEPTION or (out.http_code or 0) >= 500:
            self._host_error(item.url)
        if retry:  # back in its host's queue, claimed still: no outcome yet
            self.counters.incr(f"retried_{out.http_code}")
            failpoints.reach("fetch.backoff")  # crash tests: a URL waiting for its host's back-off
            return
        if out.code == ProtocolStatusCode.ACCESS_DENIED and out.args and out.args[0].startswith(DENIED):
            self.counters.incr("denied_address")  # refused at connect time (the name resolved elsewhere now)
        elif out.code == ProtocolStatusCode.EXCEPTION and out.args and is_dns_failure(out.args[0]):
            self.counters.incr("dns_failures")
        self.output(item, out.code, out.args, out)
        if down is not None:  # the host is down: its other URLs are failed fetches without a request
            for other in queues.drop_queue(q, lambda o: self.robots.cached(o.url) is down):
                self._unreachable(other, down)
        if dropped and q.dropped is not None:
            for other in dropped:
                self._retry_later(other, q.dropped)

    def _retry_later(self, item: FetchItem, dropped: tuple[str, str]) -> None:
        """A URL of a host dropped for this fetch (Retry-After beyond fetcher.max.crawl.delay, or
        fetcher.max.exceptions.per.queue): recorded RETRY without a request, for a later round."""
        self.counters.incr(dropped[0])
        self.output(item, ProtocolStatusCode.RETRY, [dropped[1]], None)

    def _learn_crawl_delay(self, q: FetchItemQueue, rules: RobotRules, queues: FetchItemQueues) -> float | None:
        """The host's Crawl-delay from its robots.txt rules, applied to its queue (one request at a time)."""
        delay = rules.crawl_delay(self.robots_agent) if rules.state != DEFER else None
        if delay and delay > 0:  # the site asked for spacing: one request at a time, delay apart (a floor for the
            # adaptive delay too)
            queues.set_crawl_delay(q, delay)
        return delay

    def _resource(self, url: str, until: float, page_q: FetchItemQueue, queues: FetchItemQueues,
                  protocol: ProtocolSession) -> tuple[ProtocolOutput | None, str]:
        """A resource a rendered page asks for (protocol-chromium), requested as a page is: where robots.txt allows
        it, in turn in its host's queue (fetcher.server.delay or the host's Crawl-delay after the host's last
        request, the page's own included), ended by `until` (the page's time); ``(None, reason)`` when refused.
        It passes what the fetcher's own requests pass: the URL normalizers and filters (but for urlfilter-suffix:
        a page loads scripts and styles the crawl does not fetch as pages) and the address guard."""
        try:
            queue_id(url, self.queue_mode)
        except ValueError:  # a URL the browser sent that names no host we could queue
            return None, "invalid_url"
        checked = self.resource_checker.check(url)
        if checked is None:
            return None, "filtered"
        url = checked
        if self.addresses.check(url):
            return None, "denied_address"
        rules = self._resource_robots(url, until, page_q, queues)
        if rules is None:
            return None, "stopped" if queues.aborted else "over_time"
        refusal = self._robots_refusal(url, rules)
        if refusal is not None:
            return None, refusal[0]
        q = queues.acquire(url, clock.to_monotonic(until), page_q)  # a politeness slot waits in real time
        if q is None:
            return None, "stopped" if queues.aborted else "over_time"
        try:
            out = protocol.fetch(url, deadline=until)
        finally:
            queues.release(q, held=q is page_q)
        self.counters.incr("bytes", len(out.content))
        return out, ""

    def _resource_robots(self, url: str, until: float, page_q: FetchItemQueue,
                         queues: FetchItemQueues) -> RobotRules | None:
        """robots.txt rules for a resource's host; a host new to the task has its robots.txt fetched in turn in its
        queue, by a thread of its own (the rules are the task's, not the page's: a page out of time stops waiting
        for them, the fetch goes on). None when they are not known before `until`."""
        rules = self.robots.cached(url)
        if rules is not None:
            return rules
        q = queues.acquire(url, clock.to_monotonic(until), page_q)  # a politeness slot waits in real time
        if q is None:
            return None
        loaded = threading.Event()

        def load() -> None:
            try:
                self._learn_crawl_delay(q, self.robots.rules_for(url), queues)
            finally:
                queues.release(q, held=q is page_q)
                loaded.set()

        threading.Thread(target=load, name="RobotsForResource", daemon=True).start()
        loaded.wait(max(0.0, until - clock.now()))
        return self.robots.cached(url)

    def _defer(self, item: FetchItem) -> None:
        """A URL of a host whose robots.txt gave no rules (429, 5xx, cut off): not requested, not a failed fetch;
        recorded as deferred (NOTFETCHING), so that it comes due again after http.robots.503.defer.visits.delay."""
        self.counters.incr("deferred")
        self.output(item, ProtocolStatusCode.NOTFETCHING, ["robots.txt gave no rules: deferred"], None)

    def _unreachable(self, item: FetchItem, rules: RobotRules) -> None:
        """A URL of a host whose robots.txt (or, that kept, its first request) got no response: recorded as a failed
        fetch, no request made; counted dns_failures when the host name did not resolve."""
        self.counters.incr("dns_failures" if is_dns_failure(rules.reason) else "host_unreachable")
        self.stats.error()
        self._host_error(item.url)
        where = "an earlier request" if rules.from_store else "robots.txt"
        self.output(item, ProtocolStatusCode.EXCEPTION, [f"{rules.reason} ({where})"], None)

    def _may_follow(self, target: str, q: FetchItemQueue) -> bool:
        """http.redirect.max > 0: follow a redirect inline only within the same fetch queue (its politeness
        state) and where robots.txt allows it, as Nutch 1 does; otherwise it is recorded as a redirect."""
        if stop.requested():
            return False
        try:
            if queue_id(target, self.queue_mode) != q.qid:
                return False
        except ValueError:
            return False
        if self.redirect_checker.check(target) is None or self.addresses.check(target):
            return False
        return self._robots_refusal(target, self.robots.rules_for(target)) is None


