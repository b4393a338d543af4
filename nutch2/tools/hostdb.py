"""The host database's tools (Nutch 1.x's names and flags): updatehostdb and readhostdb."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from nutch2.crawldb.hostdb import EXPR_NAMES, HostDatum, get_host, hosts
from nutch2.crawldb.hostexpr import HostExpr
from nutch2.errors import NutchError
from nutch2.mapred.frameworks import make_runner
from nutch2.stores import Held, open_store
from nutch2.tools.args import ArgError, ToolArgs, opt, tasks_opt
from nutch2.tools.base import Run, Tool, tool

log = logging.getLogger(__name__)

HOSTS_KEPT = 1000  # host datums a run keeps as its result value (the job API's)


@dataclass
class UpdateHostDbArgs(ToolArgs):
    num_tasks: int | None = tasks_opt()


@tool
class UpdateHostDb(Tool[UpdateHostDbArgs]):
    name = "updatehostdb"
    help = "compute the host table again from the rows: counts per status, failures, score per host"
    Args = UpdateHostDbArgs

    def locks(self) -> Iterator[AbstractContextManager[Any]]:
        """Its own lease, `hostdb`: one updatehostdb at a time per crawl (the crawl steps go on meanwhile)."""
        yield from super().locks()
        held = Held(open_store(self.conf, self.crawl_id, create=False))
        held.take("hostdb", self.name, self.conf.get_float("storage.lease.ttl"), log.info,
                  "updatehostdb: another updatehostdb, {holder}, is writing this crawl's host table; wait for it")
        yield held

    def run(self, run: Run) -> int:
        from nutch2.jobs.hostdb import UpdateHostDbJob

        counters = run.job_counters("updatehostdb")
        counters.incr("hosts", 0)
        with self.store() as store:
            make_runner(self.conf, self.args.num_tasks).run(UpdateHostDbJob(self.conf), store, counters)
        run.values["hosts"] = counters.get("hosts")
        run.summary(counters)
        return 0


@dataclass
class ReadHostDbArgs(ToolArgs):
    dumpHostnames: bool = opt("-dumpHostnames", "print only the host names", default=False)
    dumpHomepages: bool = opt("-dumpHomepages", "print only the home page URLs", default=False)
    get: str | None = opt("-get", "print one host's datum", metavar="HOST")
    expr: str | None = opt("-expr", "only hosts for which E holds, e.g. 'numFailures > 5 and fetched == 0'",
                           metavar="E")
    groups = (("dumpHostnames", "dumpHomepages", "get"),)

    def check(self) -> None:
        super().check()
        self.compiled()  # a bad expression is bad usage (exit 2)

    def compiled(self) -> HostExpr | None:
        try:
            return HostExpr(self.expr, EXPR_NAMES, "-expr") if self.expr else None
        except NutchError as e:
            raise ArgError(str(e)) from None


def datum_line(host: str, datum: HostDatum) -> str:
    """One host as readhostdb prints it: the host, then field=value pairs, tab-separated."""
    fields = datum.to_dict()
    shown = [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()]
    return "\t".join([host, *shown])


@tool
class ReadHostDb(Tool[ReadHostDbArgs]):
    name = "readhostdb"
    help = "print the host table (-dumpHostnames, -dumpHomepages, -get HOST; -expr E filters)"
    Args = ReadHostDbArgs

    def run(self, run: Run) -> int:
        a = self.args
        expr = a.compiled()
        with self.store() as store:
            if a.get:
                datum = get_host(store, a.get)
                if datum is None:
                    raise NutchError(f"readhostdb: {a.get} is not in the host table; run updatehostdb first, or "
                                     "list the hosts with readhostdb -dumpHostnames")
                chosen = [(a.get, datum)]
            else:
                chosen = list(hosts(store))
                if not chosen:  # printing nothing would read as "no host matched"
                    flag = f" -crawlId {self.crawl_id}" if self.crawl_id else ""
                    raise NutchError(f"readhostdb: the host table is empty; compute it from the rows with `nutch2 "
                                     f"updatehostdb{flag}` (or crawl with -hostdbupdate)")
        kept: list[dict[str, Any]] = []
        matched = 0
        for host, datum in chosen:
            if expr is not None and not expr.holds(datum.values(host)):
                continue
            matched += 1
            if a.dumpHostnames:
                run.out(host)
            elif a.dumpHomepages:
                if datum.homepageUrl:
                    run.out(datum.homepageUrl)
            else:
                run.out(datum_line(host, datum))
            if len(kept) < HOSTS_KEPT:
                kept.append({"host": host, **datum.to_dict()})
        run.values["hosts"] = kept
        run.values["hostCount"] = matched
        run.message = _summary(matched, len(chosen), a.expr, len(kept))  # the job API's message, not the last line
        return 0


def _summary(matched: int, read: int, expr: str | None, kept: int) -> str:
    """readhostdb's one line for the job API: how many hosts it listed (their datums are the job's result)."""
    line = f"readhostdb: {matched} host{'' if matched == 1 else 's'}"
    if expr:
        line += f" of {read} match {expr}"
    if kept < matched:
        line += f"; the result lists the first {kept}"
    return line
