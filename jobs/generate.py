"""GeneratorJob: select due rows, best score first, and mark them with a new batch id."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.hostdb import EXPR_NAMES, host_table
from nutch2.crawldb.hostexpr import HostExpr
from nutch2.crawldb.schedule import fetch_schedule
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.errors import ConfigError
from nutch2.mapred.job import Counters, Job, ReduceStep, TaskContext
from nutch2.mapred.runner import Runner
from nutch2.marks import Mark, get_distance
from nutch2.stores.base import DataStore
from nutch2.stores.query import Due, Query
from nutch2.urls.checker import UrlChecker
from nutch2.urls.domains import domain_of_host, host_of
from nutch2.urls.tableutil import host_of_key, unreverse_url
from nutch2.webpage import WebPage


def new_batch_id() -> str:
    """Nutch's batch id: `<unix seconds>-<random int>`."""
    return f"{int(time.time())}-{random.randint(0, 2**31 - 1)}"


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    url: str
    markers: dict[str, str]

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return Candidate, (self.key, self.url, self.markers)


class GeneratorJob(Job):
    """Map: due, unmarked, filtered rows → (host, candidate); reduce: score order, topN, per-host cap."""

    name = "generate"
    fields = ("fetch_time", "fetch_interval", "score", "markers", "status")

    def __init__(self, conf: Configuration, batch_id: str | None = None, top_n: int | None = None,
                 filter: bool | None = None, normalize: bool | None = None, add_days: int = 0) -> None:
        super().__init__(conf)
        self.batch_id = batch_id or new_batch_id()
        self.top_n = top_n if top_n and top_n > 0 else None
        self.filter = conf.get_bool("generate.filter") if filter is None else filter
        self.normalize = conf.get_bool("generate.normalise") if normalize is None else normalize
        self.cur_ms = int((time.time() + add_days * 86400) * 1000)
        self.schedule = fetch_schedule(conf)
        self.scoring = ScoringFilters.from_conf(conf)
        self.max_count = conf.get_int("generate.max.count")
        self.count_mode = conf.get_str("generate.count.mode").lower()
        if self.count_mode not in ("host", "domain"):
            raise ConfigError(f"generate.count.mode={self.count_mode!r} is not valid; use host or domain")
        self.max_distance = conf.get_int("generate.max.distance")
        self.min_score = conf.get_float("generate.min.score")
        self.checker = UrlChecker(conf, "generate_host_count", self.normalize, self.filter)
        self.skip_expr, self.count_expr = host_exprs(conf, self.count_mode)
        self.skipped: frozenset[str] = frozenset()  # hosts the skip expression holds for (per task)
        self.caps: dict[str, int] = {}  # hosts' caps by the count expression (per task)

    def map_setup(self, ctx: TaskContext) -> None:
        if self.skip_expr is not None:  # the host table: one state record per host, read once per task
            table = host_table(ctx.store)
            self.skipped = frozenset(h for h, d in table.items() if self.skip_expr.holds(d.values(h)))

    def reduce_setup(self, ctx: TaskContext) -> None:
        if self.count_expr is not None and ctx.step == 0:
            # keyed as the reduce counts (count_key: lower case, an IPv6 address without its brackets)
            self.caps = {self.count_key(f"http://{h}/"): int(self.count_expr.number(d.values(h)))
                         for h, d in host_table(ctx.store).items()}

    def query(self) -> Query:
        """The due rows only, from the store's due index (its cost follows what is due, not the table);
        the schedule also treats a fetch time beyond its max interval as due."""
        return Query(self.fields, due=Due(self.cur_ms, self.cur_ms + self.schedule.max_interval * 1000))

    def count_key(self, url: str) -> str:
        host = host_of(url)
        return domain_of_host(host) if self.count_mode == "domain" else host

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if Mark.GENERATE.check(page) is not None:
            ctx.incr("already_generated")
            return
        dist = get_distance(page)
        if self.max_distance >= 0 and dist is not None and dist > self.max_distance:
            ctx.incr("too_distant")
            return
        if self.skipped and host_of_key(page.key) in self.skipped:
            ctx.incr("hostdb_skipped")
            return
        url = unreverse_url(page.key)
        if (self.filter or self.normalize) and self.checker.check(url) is None:
            ctx.incr("filtered")
            return
        if not self.schedule.should_fetch(page, self.cur_ms):
            ctx.incr("not_due")
            return
        if page.score < self.min_score:
            ctx.incr("low_score")
            return
        sort_value = self.scoring.generator_sort_value(url, page, page.score)
        yield self.count_key(url), (-sort_value, url, Candidate(page.key, url, dict(page.markers)))

    def steps(self) -> list[ReduceStep]:
        """Per host (domain) caps in as many reducers as tasks; with topN, a second step with one reducer keeps
        the topN best of their picks (Nutch gave each reducer topN/reducers: not the best topN overall)."""
        select = ReduceStep(reducer="select", sort="by_sort_value")
        return [select, ReduceStep(reducers=1, reducer="top")] if self.top_n is not None else [select]

    @staticmethod
    def by_sort_value(item: tuple[Any, Any]) -> Any:
        """The order of the first step's candidates: sort value descending, then URL."""
        return item[1][:2]

    def select(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """Best candidates of this reducer's hosts: the per-host cap, then at most topN of them."""
        per_host: Counter[str] = Counter()
        selected = 0
        for host, value in items:
            if self.top_n is not None and selected >= self.top_n:
                ctx.incr("over_topN")
                continue
            cap = self.caps[host] if host in self.caps else self.max_count if self.max_count > 0 else -1
            if cap >= 0 and per_host[host] >= cap:
                ctx.incr("over_max_count")
                continue
            per_host[host] += 1
            selected += 1
            if self.top_n is None:
                self._mark(value[2], ctx)
            else:
                yield value[:2], value[2]

    def top(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """The one reducer of step 2: the topN best of every reducer's picks."""
        for n, (_, cand) in enumerate(items):
            if n < (self.top_n or 0):
                self._mark(cand, ctx)
            else:
                ctx.incr("over_topN")
        return iter(())

    def _mark(self, cand: Candidate, ctx: TaskContext) -> None:
        page = WebPage.from_store(cand.key, {"markers": cand.markers})  # as read: only the new mark is indexed
        page.batch_id = self.batch_id
        Mark.GENERATE.put(page, self.batch_id)
        ctx.write(page)
        ctx.incr("generated")


def host_exprs(conf: Configuration, count_mode: str) -> tuple[HostExpr | None, HostExpr | None]:
    """generate.hostdb.skip.expr and generate.max.count.expr, compiled (None: not set); a one-line ConfigError
    names a bad one."""
    skip, count = (conf.get_str(k).strip() for k in ("generate.hostdb.skip.expr", "generate.max.count.expr"))
    if count and count_mode != "host":
        raise ConfigError(f"generate.max.count.expr is per host: it needs generate.count.mode=host, not "
                          f"{count_mode!r}; set -D generate.count.mode=host or leave the expression empty")
    return (HostExpr(skip, EXPR_NAMES, "generate.hostdb.skip.expr") if skip else None,
            HostExpr(count, EXPR_NAMES, "generate.max.count.expr") if count else None)


class ReleaseJob(Job):
    """Take the generate mark of an interrupted batch (generate killed before the batch was complete) off its
    rows, so that they can be generated again."""

    name = "generate"
    fields = ("markers",)

    def __init__(self, conf: Configuration, batch_id: str) -> None:
        super().__init__(conf)
        self.batch_id = batch_id

    def mark_filter(self) -> tuple[str, str | None]:
        return (Mark.GENERATE.value, self.batch_id)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        Mark.GENERATE.remove(page)
        ctx.write(page)
        ctx.incr("released")
        return iter(())


def run_generate(job: GeneratorJob, store: DataStore, runner: Runner, counters: Counters | None = None) -> Counters:
    """Generate one batch, recorded in the journal: "generating" before the first mark is written, "generated"
    once every mark is durable. Batches of a generate that was killed in between are released first."""
    lifecycle.begin_generate(store, job.batch_id,
                             lambda batch: runner.run(ReleaseJob(job.conf, batch), store).get("released"))
    counters = runner.run(job, store, counters)
    lifecycle.end_generate(store, job.batch_id, counters.get("generated"))
    return counters



