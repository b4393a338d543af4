"""The commands behind `nutch2 <command>`: parse options, run the job, print its summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nutch2.cli import command
from nutch2.config import Configuration
from nutch2.errors import NutchError, UsageError
from nutch2.marks import ALL_BATCHES, Mark
from nutch2.runner import LocalRunner, log
from nutch2.stores import crawl_lock, open_store
from nutch2.tableutil import reverse_url
from nutch2.urls import UrlChecker


def _num_tasks(args: argparse.Namespace) -> int | None:
    return getattr(args, "num_tasks", None)


@command("inject", "inject seed URLs into the webpage table")
def inject_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.inject import InjectorJob

    job = InjectorJob(conf, Path(args.seeds), overwrite=args.overwrite, update=args.update)
    lock = crawl_lock(conf, args.crawl_id, "inject")
    try:
        with open_store(conf, args.crawl_id) as store:
            counters = LocalRunner(conf, 1).run(job, store)
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


@command("readdb", "read the webpage table: -stats, -url U or -dump DIR")
def readdb_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    from nutch2.jobs.readdb import DumpJob, StatsJob, row_to_json

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
        runner = LocalRunner(conf, _num_tasks(args))
        if args.dump:
            out = Path(args.dump)
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
    from nutch2.jobs.generate import GeneratorJob

    job = GeneratorJob(conf, batch_id, top_n, filter if filter is False else None,
                       normalize if normalize is False else None, add_days)
    lock = crawl_lock(conf, crawl_id, "generate")
    try:
        with open_store(conf, crawl_id, create=False) as store:
            counters = LocalRunner(conf, num_tasks).run(job, store)
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
    with open_store(conf, args.crawl_id, create=False) as store:
        _check_batch(store, Mark.GENERATE, batch, "fetch", "generate")
        counters = LocalRunner(conf, _num_tasks(args)).run(job, store)
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
    with open_store(conf, args.crawl_id, create=False) as store:
        _check_batch(store, Mark.FETCH, batch, "parse", "fetch")
        counters = LocalRunner(conf, _num_tasks(args)).run(job, store)
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
    from nutch2.jobs.updatedb import DbUpdaterJob

    batch = _batch(args, "updatedb")
    job = DbUpdaterJob(conf, batch)
    lock = crawl_lock(conf, args.crawl_id, "updatedb")
    try:
        with open_store(conf, args.crawl_id, create=False) as store:
            _check_batch(store, Mark.GENERATE, batch, "updatedb", "generate")
            counters = LocalRunner(conf, _num_tasks(args)).run(job, store)
    finally:
        lock.release()
    log(counters.summary())
    return 0


def _updatedb_args(p: argparse.ArgumentParser) -> None:
    _batch_arg(p)
    p.add_argument("-numTasks", dest="num_tasks", type=int, metavar="N", help="parallel tasks")


updatedb_cmd.arguments = _updatedb_args


def _check_batch(store, mark: Mark, batch: str, job: str, producer: str) -> None:
    """An unknown batch id is a user error: say so instead of silently doing nothing."""
    if batch == ALL_BATCHES:
        return
    if store.count(mark=(mark.value, batch)) == 0:
        raise NutchError(f"{job}: no rows carry batch id {batch!r} from {producer}; check the id printed by "
                         f"`nutch2 {producer}` (or use -all)")


@command("crawl", "inject, then generate → fetch → parse → updatedb for N rounds")
def crawl_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    if args.rounds < 1:
        raise UsageError("nutch2 crawl: error: -rounds must be at least 1 (see nutch2 crawl --help)")
    seeds = Path(args.seeds)
    inject_args = argparse.Namespace(seeds=str(seeds), crawl_id=args.crawl_id, overwrite=False, update=False)
    rc = inject_cmd(inject_args, conf)
    if rc != 0:
        return rc
    stop_file = Path(conf.get_str("storage.data.dir")) / "STOP"
    top_n = args.topN or conf.get_int("crawl.topN")
    for r in range(1, args.rounds + 1):
        if stop_file.exists():
            log(f"crawl: {stop_file} exists, stopping before round {r}")
            break
        log(f"crawl: round {r} of {args.rounds}")
        batch = generate(conf, args.crawl_id, top_n, num_tasks=_num_tasks(args))
        if batch is None:
            log("crawl: nothing left to fetch, stopping")
            break
        batch_args = argparse.Namespace(batch=batch, all=False, reparse=False, crawl_id=args.crawl_id,
                                        threads=args.threads, resume=False, force=False,
                                        num_tasks=_num_tasks(args))
        for step in (fetch_cmd, parse_cmd, updatedb_cmd):
            if conf.get_bool("fetcher.parse") and step is parse_cmd:
                continue
            rc = step(batch_args, conf)
            if rc != 0:
                return rc
        if args.solr:
            index(conf, args.crawl_id, batch, args.solr, num_tasks=_num_tasks(args))
    if args.solr:
        clean(conf, args.crawl_id, args.solr)
        log(f"dedup: deleted {run_dedup(conf, args.solr)} duplicate documents")
    from nutch2.jobs.readdb import StatsJob

    with open_store(conf, args.crawl_id, create=False) as store:
        job = StatsJob(conf)
        LocalRunner(conf, _num_tasks(args)).run(job, store)
    counts = " ".join(f"{k}={v}" for k, v in sorted(job.status.items()))
    print(f"crawl: {args.crawl_id or 'webpage'}: {job.total} URLs: {counts}")
    return 0


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
    from nutch2.jobs.index import IndexingJob

    solr = _solr(conf, solr_url)
    with open_store(conf, crawl_id, create=False) as store:
        if not reindex:
            _check_batch(store, Mark.UPDATEDB, batch, "index", "updatedb")
        job = IndexingJob(conf, batch, solr, reindex)
        counters = LocalRunner(conf, num_tasks).run(job, store)
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
        counters = LocalRunner(conf).run(CleaningJob(conf, solr), store)
    log(counters.summary())
    return counters.get("deleted")


@command("clean", "delete GONE pages, redirects and noindex pages from Solr")
def clean_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    print(f"clean: {clean(conf, args.crawl_id, args.solr)} documents deleted from Solr")
    return 0


def _solr_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-solr", metavar="URL", help="Solr core URL (solr.server.url)")


clean_cmd.arguments = _solr_args


def run_dedup(conf: Configuration, solr_url: str | None) -> int:
    from nutch2.jobs.index import dedup

    return dedup(_solr(conf, solr_url))


@command("dedup", "remove duplicate documents (same digest) from Solr, keeping the best")
def dedup_cmd(args: argparse.Namespace, conf: Configuration) -> int:
    print(f"dedup: {run_dedup(conf, args.solr)} duplicate documents deleted")
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
