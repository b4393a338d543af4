"""The commands behind `nutch2 <command>`: parse options, run the job, print its summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nutch2.cli import command
from nutch2.config import Configuration
from nutch2.errors import NutchError
from nutch2.jobs.inject import InjectorJob
from nutch2.jobs.readdb import DumpJob, StatsJob, row_to_json
from nutch2.runner import LocalRunner, log
from nutch2.stores import crawl_lock, open_store
from nutch2.tableutil import reverse_url


def _num_tasks(args: argparse.Namespace) -> int | None:
    return getattr(args, "num_tasks", None)


@command("inject", "inject seed URLs into the webpage table")
def inject_cmd(args: argparse.Namespace, conf: Configuration) -> int:
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
    with open_store(conf, args.crawl_id, create=False) as store:
        if args.url:
            try:
                key = reverse_url(args.url)
            except ValueError as e:
                raise NutchError(f"-url {args.url!r}: {e}") from None
            page = store.get(key)
            if page is None:
                print(f"nutch2 readdb: {args.url} is not in the table (key {key})", file=sys.stderr)
                return 1
            _print_row(row_to_json(page, text=True))
            return 0
        runner = LocalRunner(conf, _num_tasks(args))
        if args.dump:
            out = Path(args.dump)
            if out.exists() and any(out.iterdir()):
                raise NutchError(f"-dump {out}: the folder exists and is not empty; give a new folder")
            out.mkdir(parents=True, exist_ok=True)
            job = DumpJob(conf, out, args.regex, args.status, args.text, args.content)
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
