"""The commands behind `nutch2 <command>`: parse options, run the job, print its summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from nutch2.config import Configuration
from nutch2.errors import NutchError, UsageError
from nutch2.journal import FETCHED, GENERATED, GENERATING, ORDER, PARSED, UPDATED, UPDATING, Journal, has_rows
from nutch2.marks import ALL_BATCHES, Mark, valid_batch_id
from nutch2.runner import Counters, log
from nutch2.runners import make_runner
from nutch2.stores import BatchLock, crawl_lock, open_store
from nutch2.tableutil import reverse_url
from nutch2.urls import UrlChecker

COMMANDS: dict[str, tuple[str, Callable[..., int]]] = {}


def command(name: str, help: str):
    """Register `fn(args, conf) -> exit code` as a command; `fn.arguments(parser)` adds its options."""

    def wrap(fn: Callable[..., int]) -> Callable[..., int]:
        COMMANDS[name] = (help, fn)
        return fn

    return wrap


def _num_tasks(args: argparse.Namespace) -> int | None:
    return getattr(args, "num_tasks", None)


@command("inject", "inject seed URLs into the webpage table")
def inject_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.inject import InjectorJob

    job = InjectorJob(conf, Path(args.seeds), overwrite=args.overwrite, update=args.update)
    lock = crawl_lock(conf, args.crawl_id, "inject")
    try:
        with open_store(conf, args.crawl_id) as store:
            counters = make_runner(conf, 1).run(job, store)
    finally:
        lock.release()
    c = counters
    log(f"{counters.summary()}")
    print(f"inject: {c.get('injected')} injected, {c.get('filtered')} filtered, {c.get('rejected')} rejected, "
          f"{c.get('known')} already known" + (f", {c.get('updated')} updated" if args.update else "")
          + (f", {c.get('overwritten')} overwritten" if args.overwrite else ""))
    if c.get("injected") + c.get("known") + c.get("updated") == 0:
        print("nutch2 inject: error: no URL was injected; check the seed lines and conf/regex-urlfilter.txt",
              file=sys.stderr)
        return 1
    return 0


def _inject_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("seeds", help="a seed file (one URL per line, tab-separated k=v metadata) or a folder of them")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-overwrite", action="store_true", help="replace rows of URLs already in the table")
    g.add_argument("-update", action="store_true", help="apply the seed's score/interval/metadata to known rows")


inject_cmd.arguments = _inject_args


@command("sitemap", "fetch sitemaps (listed, or named in robots.txt) and add the URLs they list to the table")
def sitemap_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.sitemap import SitemapJob

    if not args.sitemap_urls and not args.from_robots:
        raise UsageError("nutch2 sitemap: error: give -sitemapUrls FILE|DIR, -fromRobots or both "
                         "(see nutch2 sitemap --help)")
    conf = conf.copy()
    for flag, key in ((args.no_strict, "sitemap.strict.parsing"), (args.no_filter, "sitemap.url.filter"),
                      (args.no_normalize, "sitemap.url.normalize")):
        if flag:
            conf.set(key, False)
    job = SitemapJob(conf, Path(args.sitemap_urls) if args.sitemap_urls else None, args.from_robots, args.threads)
    lock = crawl_lock(conf, args.crawl_id, "sitemap")
    try:
        with open_store(conf, args.crawl_id) as store:
            c = make_runner(conf, _num_tasks(args)).run(job, store)
    finally:
        lock.release()
    log(c.summary())
    print(f"sitemap: {c.get('found')} URLs found in {c.get('sitemaps_fetched')} sitemaps: {c.get('injected')} "
          f"injected, {c.get('updated')} updated, {c.get('known')} already known, {c.get('rejected')} rejected")
    return 0


def _sitemap_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-sitemapUrls", dest="sitemap_urls", metavar="FILE|DIR",
                   help="a file (or folder of files) with one sitemap URL, or host name, per line")
    p.add_argument("-fromRobots", dest="from_robots", action="store_true",
                   help="the sitemaps named in the robots.txt of every host in the table")
    p.add_argument("-noStrict", dest="no_strict", action="store_true",
                   help="accept URLs outside a sitemap's folder (sitemap.strict.parsing=false)")
    p.add_argument("-noFilter", dest="no_filter", action="store_true", help="do not apply URL filters")
    p.add_argument("-noNormalize", dest="no_normalize", action="store_true", help="do not normalize URLs")
    p.add_argument("-threads", type=int, metavar="N", help="fetcher threads per task (fetcher.threads.fetch)")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


sitemap_cmd.arguments = _sitemap_args


@command("warc", "write the fetched pages of a batch (or -all) as WARC/1.1 files")
def warc_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.warc import export

    batch = _batch(args, "warc")
    max_mb = args.max_size if args.max_size is not None else conf.get_float("warc.export.max.size.mb")
    out = Path(args.outdir)
    with open_store(conf, args.crawl_id, create=False) as store:
        counters, files = export(conf, store, out, batch, args.crawl_id, max_mb, make_runner(conf, _num_tasks(args)))
    log(counters.summary())
    print(f"warc: {counters.get('exported')} pages in {len(files)} files under {out}; skipped "
          f"{counters.get('skipped_not_fetched')} rows not fetched and {counters.get('skipped_no_content')} without "
          "stored content")
    return 0


def _warc_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("outdir", metavar="OUTDIR", help="folder for the .warc.gz files")
    _batch_arg(p)
    p.add_argument("-maxSize", dest="max_size", type=float, metavar="MB",
                   help="start a new file once one holds this many MB (warc.export.max.size.mb)")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks (one file set each)")


warc_cmd.arguments = _warc_args


@command("warcimport", "load the HTTP responses of WARC files as a fetched batch (prints its id)")
def warcimport_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.warc import import_id, run_import

    paths = [Path(p) for p in args.files]
    for path in paths:
        if not path.is_file():
            raise NutchError(f"{path} is not a file; give WARC files (.warc or .warc.gz)")
    try:
        batch = import_id(paths)  # the files' digest: the same files, the same batch
    except OSError as e:
        raise NutchError(f"cannot read {e.filename}: {e.strerror}; check its permissions") from None
    lock = crawl_lock(conf, args.crawl_id, "warcimport")
    try:
        with open_store(conf, args.crawl_id) as store, BatchLock(conf, args.crawl_id, batch, "warcimport"):
            counters = Counters("warcimport")
            run_import(conf, store, paths, batch, make_runner(conf, _num_tasks(args)), counters)
    finally:
        lock.release()
    log(counters.summary())
    print(batch)
    return 0


def _warcimport_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="WARC files (.warc or .warc.gz), e.g. Common Crawl's")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


warcimport_cmd.arguments = _warcimport_args


@command("readdb", "read the webpage table: -stats, -url U or -dump DIR")
def readdb_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.readdb import DumpJob, StatsJob
    from nutch2.rowjson import row_to_json

    with open_store(conf, args.crawl_id, create=False) as store:
        if args.url:
            url = UrlChecker(conf, "inject", filter=False).normalize(args.url)  # the form inject stored it in
            try:
                key = reverse_url(url or "")
            except ValueError:
                key = None
            if url is None or key is None:
                raise NutchError(f"-url {args.url!r} is not a valid http(s), ftp or file URL; give one like "
                                 "https://example.com/page")
            page = store.get(key)
            if page is None:
                print(f"nutch2 readdb: {url} is not in the table (key {key})", file=sys.stderr)
                return 1
            _print_row(row_to_json(page, text=True))
            return 0
        runner = make_runner(conf, _num_tasks(args))
        if args.dump:
            out = Path(args.dump)
            if out.exists() and not out.is_dir():
                raise NutchError(f"-dump {out}: it is a file; give a new folder")
            if out.exists() and any(out.iterdir()):
                raise NutchError(f"-dump {out}: the folder exists and is not empty; give a new folder")
            job = DumpJob(conf, out, args.regex, args.status, args.text, args.content)
            out.mkdir(parents=True, exist_ok=True)
            counters = runner.run(job, store)
            log(counters.summary())
            print(f"readdb: dumped {counters.get('dumped')} rows to {out}")
            return 0
        job = StatsJob(conf, per_host=args.sort)
        runner.run(job, store)
        job.report(sys.stdout)
        return 0


def _print_row(doc: dict) -> None:
    for k, v in doc.items():
        if isinstance(v, dict) and v and k not in ("protocolStatus", "parseStatus"):
            print(f"{k}:")
            for kk, vv in v.items():
                print(f"\t{kk}\t{vv}")
        else:
            print(f"{k}:\t{v}")


def _readdb_args(p: argparse.Namespace) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("-stats", action="store_true", help="counts per status and retry, score min/avg/max")
    g.add_argument("-url", metavar="URL", help="print one row")
    g.add_argument("-dump", metavar="DIR", help="write every row as JSON Lines into DIR")
    p.add_argument("-sort", action="store_true", help="with -stats: counts per host")
    p.add_argument("-regex", metavar="R", help="with -dump: only URLs matching R")
    p.add_argument("-status", metavar="NAME", help="with -dump: only rows with this status (e.g. FETCHED)")
    p.add_argument("-text", action="store_true", help="with -dump: include parsed text")
    p.add_argument("-content", action="store_true", help="with -dump: include raw content (base64)")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel map tasks")


readdb_cmd.arguments = _readdb_args


def _batch_arg(p: argparse.ArgumentParser, reparse: bool = False) -> None:
    p.add_argument("batch", nargs="?", metavar="<batchId>", help="the batch id printed by generate")
    p.add_argument("-all", action="store_true", help="every batch")
    if reparse:
        p.add_argument("-reparse", action="store_true", help="parse every fetched row again")


def _batch(args: argparse.Namespace, job: str) -> str:
    """The batch id, ALL_BATCHES for -all (or -reparse); a usage error when neither is given."""
    chosen = [x for x in (args.batch, args.all or None, getattr(args, "reparse", None) or None) if x]
    if len(chosen) != 1:
        what = "<batchId>, -all or -reparse" if hasattr(args, "reparse") else "<batchId> or -all"
        raise UsageError(f"nutch2 {job}: error: give exactly one of {what} (see nutch2 {job} --help)")
    if args.batch is not None and not valid_batch_id(args.batch):
        raise UsageError(f"nutch2 {job}: error: {args.batch!r} is not a batch id; give the id printed by "
                         "`nutch2 generate` (letters, digits, '_', '-', '.')")
    return ALL_BATCHES if args.batch is None else args.batch


@command("generate", "select due URLs into a new batch and print its id")
def generate_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    batch = generate(conf, args.crawl_id, args.topN, args.batchId, not args.noFilter, not args.noNorm, args.adddays,
                     _num_tasks(args))
    if batch is None:
        return 1
    print(batch)
    return 0


def generate(conf: Configuration, crawl_id: str | None, top_n: int | None, batch_id: str | None = None,
             filter: bool = True, normalize: bool = True, add_days: int = 0,
             num_tasks: int | None = None) -> str | None:
    """Run the generator; the batch id, or None when nothing was generated."""
    from nutch2.jobs.generate import GeneratorJob, run_generate

    if batch_id is not None and (batch_id == ALL_BATCHES or not valid_batch_id(batch_id)):
        raise UsageError(f"nutch2 generate: error: -batchId {batch_id!r} is not valid; use letters, digits, '_', "
                         "'-' or '.' (max 64)")
    job = GeneratorJob(conf, batch_id, top_n, filter if filter is False else None,
                       normalize if normalize is False else None, add_days)
    lock = crawl_lock(conf, crawl_id, "generate")
    try:
        with open_store(conf, crawl_id, create=False) as store:
            counters = run_generate(job, store, make_runner(conf, num_tasks))
    finally:
        lock.release()
    log(counters.summary())
    if counters.get("generated") == 0:
        log("generate: 0 records selected for fetching, exiting")
        return None
    log(f"generate: batch id {job.batch_id}: {counters.get('generated')} URLs")
    return job.batch_id


def _generate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-topN", type=int, metavar="N", help="at most N URLs in the batch")
    p.add_argument("-batchId", metavar="ID", help="use this batch id instead of a new one")
    p.add_argument("-noFilter", action="store_true", help="do not apply URL filters")
    p.add_argument("-noNorm", action="store_true", help="do not normalize URLs")
    p.add_argument("-adddays", type=int, default=0, metavar="D", help="generate as if D days later")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


generate_cmd.arguments = _generate_args


@command("fetch", "fetch the URLs of a batch")
def fetch_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.fetch import FetcherJob

    batch = _batch(args, "fetch")
    job = FetcherJob(conf, batch, args.threads, args.resume)
    with BatchLock(conf, args.crawl_id, batch, "fetch"), open_store(conf, args.crawl_id, create=False) as store:
        counters = Counters("fetch")
        if has_rows(store, Mark.GENERATE, batch, "fetch", "generate", counters):
            make_runner(conf, _num_tasks(args)).run(job, store, counters)
            Journal(store).advance(batch, PARSED if conf.get_bool("fetcher.parse") else FETCHED)
    log(counters.summary())
    return 0


def _fetch_args(p: argparse.ArgumentParser) -> None:
    _batch_arg(p)
    p.add_argument("-threads", type=int, metavar="N", help="fetcher threads per task (fetcher.threads.fetch)")
    p.add_argument("-resume", action="store_true", help="skip URLs already fetched in this batch")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel fetch tasks (reducers)")


fetch_cmd.arguments = _fetch_args


@command("parse", "parse the fetched pages of a batch")
def parse_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.parse import ParserJob

    batch = _batch(args, "parse")
    job = ParserJob(conf, batch, args.resume, args.force, args.reparse)
    with BatchLock(conf, args.crawl_id, batch, "parse"), open_store(conf, args.crawl_id, create=False) as store:
        counters = Counters("parse")
        if has_rows(store, Mark.FETCH, batch, "parse", "fetch", counters):
            make_runner(conf, _num_tasks(args)).run(job, store, counters)
        if not args.reparse:
            Journal(store).advance(batch, PARSED)
    log(counters.summary())
    return 0


def _parse_args(p: argparse.ArgumentParser) -> None:
    _batch_arg(p, reparse=True)
    p.add_argument("-resume", action="store_true", help="skip pages already parsed")
    p.add_argument("-force", action="store_true", help="with -resume: parse again pages already parsed")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


parse_cmd.arguments = _parse_args


@command("updatedb", "update the table with a batch's fetch and parse results")
def updatedb_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.updatedb import update

    batch = _batch(args, "updatedb")
    lock = crawl_lock(conf, args.crawl_id, "updatedb")
    try:
        with BatchLock(conf, args.crawl_id, batch, "updatedb"), \
                open_store(conf, args.crawl_id, create=False) as store:
            counters = update(conf, store, batch, _num_tasks(args))
    finally:
        lock.release()
    log(counters.summary())
    return 0


def _updatedb_args(p: argparse.ArgumentParser) -> None:
    _batch_arg(p)
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


updatedb_cmd.arguments = _updatedb_args


@command("crawl", "inject, then generate → fetch → parse → updatedb for N rounds")
def crawl_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    """The crawl script. Killed and run again, it first finishes what was under way — every batch that still
    carries generate marks gets fetch -resume, parse -resume and updatedb (and index) — then does the rounds
    the interrupted crawl had left (the journal keeps the round), then ends as an uninterrupted run would."""
    if args.rounds < 1:
        raise UsageError("nutch2 crawl: error: -rounds must be at least 1 (see nutch2 crawl --help)")
    from nutch2.fetcher import fetcher_threads, http_settings

    fetcher_threads(conf, args.threads)  # bad fetch settings fail before anything is injected
    http_settings(conf)
    seeds = Path(args.seeds)
    inject_args = argparse.Namespace(seeds=str(seeds), crawl_id=args.crawl_id, overwrite=False, update=False)
    rc = inject_cmd(inject_args, conf)
    if rc != 0:
        return rc
    stop_file = Path(conf.get_str("storage.data.dir")) / "STOP"
    top_n = args.topN or conf.get_int("crawl.topN")
    first = _finish_interrupted(conf, args)
    for r in range(first, args.rounds + 1):
        if stop_file.exists():
            log(f"crawl: {stop_file} exists, stopping before round {r}")
            break
        log(f"crawl: round {r} of {args.rounds}")
        _record_crawl(conf, args.crawl_id, {"round": r, "rounds": args.rounds})
        batch = generate(conf, args.crawl_id, top_n, num_tasks=_num_tasks(args))
        if batch is None:
            log("crawl: nothing left to fetch, stopping")
            break
        _record_crawl(conf, args.crawl_id, {"round": r, "rounds": args.rounds, "batch": batch})
        _run_batch(conf, args, batch, resume=False)
    if args.solr:
        clean(conf, args.crawl_id, args.solr)
        log(f"dedup: deleted {run_dedup(conf, args.solr, args.crawl_id)} duplicate documents")
    _record_crawl(conf, args.crawl_id, None)
    from nutch2.jobs.readdb import StatsJob

    with open_store(conf, args.crawl_id, create=False) as store:
        job = StatsJob(conf)
        make_runner(conf, _num_tasks(args)).run(job, store)
    counts = " ".join(f"{k}={v}" for k, v in sorted(job.status.items()))
    print(f"crawl: {args.crawl_id or 'webpage'}: {job.total} URLs: {counts}")
    return 0


def _record_crawl(conf: Configuration, crawl_id: str | None, value: dict | None) -> None:
    with open_store(conf, crawl_id, create=False) as store:
        Journal(store).record_crawl(value)


def _finish_interrupted(conf: Configuration, args: argparse.Namespace) -> int:
    """Finish the batches an interrupted crawl (or any job) left under way; the round to go on with."""
    with open_store(conf, args.crawl_id, create=False) as store:
        journal = Journal(store)
        state = journal.crawl()
        order = {rec.batch_id: i for i, rec in enumerate(journal.batches())}
        pending = sorted(store.mark_values(Mark.GENERATE.value) | {
            r.batch_id for r in journal.batches() if r.state == UPDATING and r.batch_id != ALL_BATCHES},
            key=lambda b: (order.get(b, -1), b))
        importing = journal.importing()
        unfinished = [b for b in pending if b not in importing
                      and ((rec := journal.batch(b)) is None or rec.state != GENERATING)]
    for batch in importing:
        log(f"crawl: batch {batch} is being imported, or its warcimport was interrupted; left for that warcimport")
    if state is not None:
        log(f"crawl: an earlier crawl was interrupted in round {state['round']} of {state['rounds']}; finishing it")
    for batch in unfinished:
        log(f"crawl: finishing batch {batch}")
        _run_batch(conf, args, batch, resume=True)
    if state is None:
        return 1
    return state["round"] + 1 if "batch" in state else state["round"]


def _run_batch(conf: Configuration, args: argparse.Namespace, batch: str, resume: bool) -> None:
    """The steps of one batch that did not run to their end yet — fetch, parse, updatedb — then index; a failing
    step ends the crawl with its error."""
    batch_args = argparse.Namespace(batch=batch, all=False, reparse=False, crawl_id=args.crawl_id,
                                    threads=args.threads, resume=resume, force=False, num_tasks=_num_tasks(args))
    with open_store(conf, args.crawl_id, create=False) as store:
        rec = Journal(store).batch(batch)
    done = ORDER.index(rec.state) if rec is not None else ORDER.index(GENERATED)
    for step, state in ((fetch_cmd, FETCHED), (parse_cmd, PARSED), (updatedb_cmd, UPDATED)):
        if done >= ORDER.index(state) or (step is parse_cmd and conf.get_bool("fetcher.parse") and not resume):
            continue
        rc = step(batch_args, conf)
        if rc != 0:
            raise NutchError(f"crawl: {step.__name__.removesuffix('_cmd')} of batch {batch} failed (exit {rc})")
    if args.solr:
        index(conf, args.crawl_id, batch, args.solr, num_tasks=_num_tasks(args))


def _crawl_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("seeds", help="a seed file or folder")
    p.add_argument("-rounds", type=int, required=True, metavar="N", help="generate/fetch/parse/updatedb rounds")
    p.add_argument("-topN", type=int, metavar="N", help="URLs per round (crawl.topN)")
    p.add_argument("-threads", type=int, metavar="N", help="fetcher threads (fetcher.threads.fetch)")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks per job")
    p.add_argument("-solr", metavar="URL", help="index each round into this Solr core, then clean and dedup")


crawl_cmd.arguments = _crawl_args


def _solr(conf: Configuration, url: str | None):
    from nutch2.solr import SolrClient, solr_url

    client = SolrClient(solr_url(conf, url), conf.get_float("solr.timeout"))
    client.ping()
    return client


def index(conf: Configuration, crawl_id: str | None, batch: str, solr_url: str | None, reindex: bool = False,
          num_tasks: int | None = None) -> int:
    """Index a batch (or -all / -reindex); returns the number of documents sent."""
    from nutch2.jobs.index import run_index

    solr = _solr(conf, solr_url)
    with BatchLock(conf, crawl_id, batch, "index"), open_store(conf, crawl_id, create=False) as store:
        counters = Counters("index")
        if reindex or has_rows(store, Mark.UPDATEDB, batch, "index", "updatedb", counters):
            run_index(conf, store, batch, solr.url, reindex, make_runner(conf, num_tasks), counters, crawl_id)
    log(counters.summary())
    return counters.get("indexed")


@command("index", "send parsed, updated pages of a batch to Solr")
def index_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    reindex = bool(args.reindex)
    batch = ALL_BATCHES if reindex and not args.batch and not args.all else _batch(args, "index")
    n = index(conf, args.crawl_id, batch, args.solr, reindex, _num_tasks(args))
    print(f"index: {n} documents sent to Solr")
    return 0


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("batch", nargs="?", metavar="<batchId>", help="the batch id (rows updated by updatedb)")
    p.add_argument("-all", action="store_true", help="every row updated since it was last indexed")
    p.add_argument("-reindex", action="store_true", help="every indexable row, indexed before or not")
    p.add_argument("-solr", metavar="URL", help="Solr core URL (solr.server.url)")
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


index_cmd.arguments = _index_args


def clean(conf: Configuration, crawl_id: str | None, solr_url: str | None) -> int:
    from nutch2.jobs.index import CleaningJob

    solr = _solr(conf, solr_url)
    with open_store(conf, crawl_id, create=False) as store:
        counters = make_runner(conf).run(CleaningJob(conf, solr.url, crawl_id), store)
    log(counters.summary())
    return counters.get("deleted")


@command("clean", "delete GONE pages, redirects and noindex pages from Solr")
def clean_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    print(f"clean: {clean(conf, args.crawl_id, args.solr)} documents deleted from Solr")
    return 0


def _solr_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-solr", metavar="URL", help="Solr core URL (solr.server.url)")


clean_cmd.arguments = _solr_args


def run_dedup(conf: Configuration, solr_url: str | None, crawl_id: str | None) -> int:
    from nutch2.jobs.index import dedup

    return dedup(_solr(conf, solr_url), crawl_id)


@command("dedup", "remove the crawl's duplicate documents (same digest) from Solr, keeping the best")
def dedup_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    print(f"dedup: {run_dedup(conf, args.solr, args.crawl_id)} duplicate documents deleted")
    return 0


dedup_cmd.arguments = _solr_args


@command("search", "search the Solr index: title, URL and a highlighted snippet per hit")
def search_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    import html
    import re

    solr = _solr(conf, args.solr)
    res = solr.search(args.query, **{"rows": args.rows, "fl": "id,url,title,boost", "hl": "true",
                                     "hl.fl": "content,title", "hl.snippets": 1, "hl.fragsize": 160})
    bold = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("*", "*")
    print(f"{res.hits} hits for {args.query!r}")
    for i, doc in enumerate(res.docs, 1):
        hl = res.highlighting.get(doc["id"], {})
        snippet = (hl.get("content") or hl.get("title") or [""])[0]
        snippet = html.unescape(re.sub(r"</?em>", lambda m: bold[1] if m.group(0) == "</em>" else bold[0],
                                       " ".join(snippet.split())))
        print(f"{i:>3}. {doc.get('title') or '(no title)'}\n     {doc['url']}")
        if snippet:
            print(f"     {snippet}")
    return 0


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="a Solr query, e.g. 'nutch crawler' or title:nutch")
    p.add_argument("-rows", type=int, default=10, metavar="N", help="results to show (10)")
    _solr_args(p)


search_cmd.arguments = _search_args


@command("server", "serve search, cached pages, page info, a crawl dashboard and a JSON API over HTTP")
def server_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.searcher.server import ServerOptions, add_user_interactively, serve

    if args.add_user:
        if not args.users:
            raise UsageError("nutch2 server: error: -addUser NAME needs -users FILE (the file to write)")
        return add_user_interactively(args.users, args.add_user)
    # jobs started over the API run `nutch2 <job>` with the server's own configuration
    conf_argv = ["--conf", str(conf.conf_dir.resolve())]
    for define in [*args.global_defines, *args.defines]:
        conf_argv += ["-D", define]
    opts = ServerOptions(args.host, args.port, args.jobs, args.token_file, args.users, args.insecure, args.ssl_cert,
                         args.ssl_key)
    return serve(conf, args.crawl_id, args.solr, opts, conf_argv)


def _server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-solr", metavar="URL", help="Solr core URL (solr.server.url)")
    p.add_argument("-host", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (127.0.0.1); another than loopback needs a login or -insecure")
    p.add_argument("-port", type=int, default=8081, metavar="N", help="port to listen on (8081; 0: any free port)")
    p.add_argument("-jobs", action="store_true", help="also serve Nutch 2's job API (POST /api/jobs)")
    p.add_argument("-tokenFile", dest="token_file", metavar="FILE",
                   help="require 'Authorization: Bearer <the token in FILE>' (searcher.auth.token.file)")
    p.add_argument("-users", metavar="FILE",
                   help="require HTTP basic login as a user of FILE, passwords hashed (searcher.auth.users.file)")
    p.add_argument("-addUser", dest="add_user", metavar="NAME",
                   help="with -users FILE: add or replace user NAME (password from the terminal or stdin), exit")
    p.add_argument("-insecure", action="store_true", help="serve a non-loopback -host without a login")
    p.add_argument("-sslCert", dest="ssl_cert", metavar="PEM", help="serve HTTPS with this certificate chain")
    p.add_argument("-sslKey", dest="ssl_key", metavar="PEM", help="the private key of -sslCert")


server_cmd.arguments = _server_args
