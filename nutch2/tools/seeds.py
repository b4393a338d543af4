"""Tools that add URLs to the table: inject (seed files) and sitemap."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from nutch2.errors import NothingWritten
from nutch2.logs import counted
from nutch2.mapred.frameworks import make_runner
from nutch2.tools.args import ArgError, ToolArgs, opt, tasks_opt, threads_opt
from nutch2.tools.base import Run, Tool, tool


@dataclass
class SeedsArgs(ToolArgs):
    """Seeds: a file or folder (CLI, or a name in the server's files folder), or lines sent to the job API."""

    seeds: Path | None = opt(None, "a seed file (one URL per line, tab-separated k=v metadata) or a folder of them",
                             metavar="seeds", api="file_in", name="seedDir")
    seedUrls: list[str] | None = opt(None, "seed lines (the job API's way to send seeds)", cli=False)
    groups: ClassVar[tuple[tuple[str, ...], ...]] = (("seeds", "seedUrls"),)
    seeds_required: ClassVar[bool] = True

    def check(self) -> None:
        super().check()
        if self.seeds_required and self.seeds is None and not self.seedUrls:
            raise ArgError("give the seeds: a seed file or folder")
        for line in self.seedUrls or []:
            if "\n" in line or "\r" in line:
                raise ArgError("a seed line cannot hold a line break")


@contextmanager
def seed_path(args: SeedsArgs) -> Iterator[Path]:
    """The seed file or folder; sent lines written to a file of their own for the time of the job."""
    if args.seeds is not None:
        yield args.seeds
        return
    with tempfile.TemporaryDirectory(prefix="nutch2-seeds-") as tmp:
        path = Path(tmp) / "seeds.txt"
        path.write_text("".join(line.strip() + "\n" for line in args.seedUrls or []), encoding="utf-8")
        yield path


def as_sent(line: str, seeds: Path, sent: bool) -> str:
    """A rejected line's "file:N: reason" as the client knows it: seedUrls[N-1] when the seeds came in the request
    (the file they were written to is the server's)."""
    where, _, reason = line.partition(": ")
    if sent and where.startswith(f"{seeds}:"):
        return f"seedUrls[{int(where.rsplit(':', 1)[1]) - 1}]: {reason}"
    return line


@dataclass
class InjectArgs(SeedsArgs):
    overwrite: bool = opt("-overwrite", "replace rows of URLs already in the table", default=False)
    update: bool = opt("-update", "apply the seed's score/interval/metadata to known rows", default=False)
    groups = (("overwrite", "update"), ("seeds", "seedUrls"))


@tool
class Inject(Tool[InjectArgs]):
    name = "inject"
    plugin_points = ("url-filter", "url-normalizer", "scoring-filter")
    help = "inject seed URLs into the webpage table"
    Args = InjectArgs
    crawl_lock = True
    creates = True

    def prepare(self) -> None:
        from nutch2.jobs.inject import check_seed_files

        super().prepare()
        if self.args.seeds is not None:  # before the table is made: a wrong path or a file that is not text
            check_seed_files(self.args.seeds)

    def run(self, run: Run) -> int:
        with seed_path(self.args) as seeds:
            return self._inject(run, seeds)

    def _inject(self, run: Run, seeds: Path) -> int:
        from nutch2.jobs.inject import InjectorJob

        a = self.args
        job = InjectorJob(self.conf, seeds, overwrite=a.overwrite, update=a.update)
        counters = run.job_counters("inject")
        with self.store(create=True) as store:
            make_runner(self.conf, 1).run(job, store, counters)
        for name in ("injected", "filtered", "rejected", "known"):
            counters.incr(name, 0)  # the summary always says all four
        run.summary(counters)
        if job.rejected:  # the job API's result names them (a terminal has seen each line logged)
            run.values["rejectedLines"] = [as_sent(line, seeds, a.seedUrls is not None) for line in job.rejected]
        if job.refused_hosts:
            run.values["refusedHosts"] = job.refused_hosts
        c = counters
        if c.get("injected") + c.get("known") + c.get("updated") == 0:
            why = ", ".join(f"{counted(c.get(k), what)} {done}" for k, what, done in (
                ("rejected", "line", "rejected"), ("filtered", "URL", "filtered out")) if c.get(k))
            raise NothingWritten(f"inject: no URL was injected{f' ({why})' if why else ''}; check the seed lines "
                                 "and conf/regex-urlfilter.txt")
        return 0


@dataclass
class SitemapArgs(ToolArgs):
    sitemapUrls: Path | None = opt("-sitemapUrls", "a file (or folder of files) with one sitemap URL, or host "
                                   "name, per line", metavar="FILE|DIR", api="file_in")
    fromRobots: bool = opt("-fromRobots", "the sitemaps named in the robots.txt of every host in the table",
                           default=False)
    noStrict: bool = opt("-noStrict", "accept URLs outside a sitemap's folder (sitemap.strict.parsing=false)",
                         default=False)
    noFilter: bool = opt("-noFilter", "do not apply URL filters", default=False)
    noNormalize: bool = opt("-noNormalize", "do not normalize URLs", default=False)
    threads: int | None = threads_opt()
    num_tasks: int | None = tasks_opt()

    def check(self) -> None:
        super().check()
        if self.sitemapUrls is None and not self.fromRobots:
            raise ArgError("give -sitemapUrls FILE|DIR, -fromRobots or both")


@tool
class Sitemap(Tool[SitemapArgs]):
    name = "sitemap"
    plugin_points = ("protocol", "url-filter", "url-normalizer", "scoring-filter")
    help = "fetch sitemaps (listed, or named in robots.txt) and add the URLs they list to the table"
    Args = SitemapArgs
    crawl_lock = True
    creates = True

    def run(self, run: Run) -> int:
        from nutch2.jobs.sitemap import SitemapJob

        a = self.args
        conf = self.conf.copy()
        for flag, key in ((a.noStrict, "sitemap.strict.parsing"), (a.noFilter, "sitemap.url.filter"),
                          (a.noNormalize, "sitemap.url.normalize")):
            if flag:
                conf.set(key, False)
        job = SitemapJob(conf, a.sitemapUrls, a.fromRobots, a.threads)
        counters = run.job_counters("sitemap")
        with self.store(create=True) as store:
            make_runner(conf, a.num_tasks).run(job, store, counters)
        for name in ("found", "sitemaps_fetched", "injected", "updated", "known", "rejected"):
            counters.incr(name, 0)
        run.summary(counters)
        return 0
