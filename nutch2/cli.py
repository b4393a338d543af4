"""The `nutch2` command: a loop over the tool registry (nutch2/tools) with Nutch's single-dash options, -D
overrides, -v/-q, one-line errors, and stop-on-signal.

Exit codes: 0 done; 1 the command could not do its job (one line says why); 2 bad usage; 130 stopped by a
signal (the line names the command that resumes); 141 stdout closed (e.g. `| head`), quietly.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from nutch2 import logs
from nutch2.config import Configuration, parse_define
from nutch2.errors import ConfigError, NutchError, StoreUnavailable, UsageError, WorkerDied, error_line
from nutch2.mapred import clock, hangs, stop
from nutch2.mapred.memory import limit_arenas
from nutch2.searcher import command  # noqa: F401 - the server command registers itself beside the tools
from nutch2.stores import Capability, open_store, store_class
from nutch2.tools import TOOLS, Run, Tool, tools
from nutch2.tools.args import ArgError, NoAbbrevParser, add_arguments, from_namespace, opts

log = logging.getLogger("nutch2.cli")  # by name: `python -m nutch2.cli` runs this module as __main__


class Parser(NoAbbrevParser):
    """argparse that reports a usage error as one line and exits 2 (and takes no abbreviations)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if m := re.match(r"argument <command>: invalid choice: '([^']*)'", message):  # a typo: say the nearest
            close = difflib.get_close_matches(m.group(1), TOOLS, n=1)
            message = f"no command {m.group(1)!r}" + (f"; did you mean {close[0]!r}?" if close else "")
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def _nutch_hint(tool: str, extra: list[str]) -> str:
    """What an argument Nutch's commands take is called here, for a Nutch user's habit."""
    if "-depth" in extra:
        return "; Nutch 1's -depth N is -rounds N here"
    if tool == "index" and "-deleteGone" in extra:  # bin/nutch index ... -deleteGone
        return ("; Nutch 1's -deleteGone is `nutch2 clean` here (GONE pages, redirects, noindex pages and duplicates "
                "out of every index writer; crawl runs it each round)")
    if any(w in ("-s", "--set") for w in extra):  # scrapy crawl -s NAME=VALUE
        return "; Scrapy's -s NAME=VALUE is -D property=value here (conf/nutch-default.toml lists them)"
    if tool == "crawl" and len(extra) == 2 and extra[1].lstrip("-").isdigit():  # bin/crawl <seeds> <id> <rounds>
        return f"; Nutch 2's bin/crawl <seedDir> <crawlId> <rounds> is: -crawlId {extra[0]} -rounds {extra[1]}"
    flags = [o.flag for _, o, _, _ in opts(TOOLS[tool].Args) if o.flag] + ["-crawlId", "-D"]
    for word in extra:  # a typo of a flag (-thread for -threads)
        if word.startswith("-") and (close := difflib.get_close_matches(word, flags, n=1, cutoff=0.75)):
            return f"; did you mean {close[0]}?"
    return ""


def add_common(p: argparse.ArgumentParser, crawl_id: bool = True) -> None:
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="key=value",
                   help="override a configuration property")
    p.add_argument("--conf", dest="conf_dir", metavar="DIR",
                   help="configuration folder (default: $NUTCH_CONF_DIR, else ./conf, else the shipped one)")
    p.add_argument("-v", dest="verbose", action="count", default=0, help="more log lines (log.level=DEBUG)")
    p.add_argument("-q", dest="quiet", action="store_true", help="warnings and errors only (log.level=WARNING)")
    if crawl_id:
        p.add_argument("-crawlId", dest="crawl_id", metavar="ID", help="crawl id (table <ID>_webpage)")


def build_parser() -> Parser:
    parser = Parser(prog="nutch2", description="A storage-abstracted web crawler in the style of Apache Nutch 2.",
                    allow_abbrev=False)
    parser.add_argument("--conf", dest="global_conf_dir", metavar="DIR", help="configuration folder")
    parser.add_argument("-D", dest="global_defines", action="append", default=[], metavar="key=value",
                        help="override a configuration property")
    parser.add_argument("--version", action="version", version=f"nutch2 {__import__('nutch2').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=Parser)
    for cls in tools():
        p = sub.add_parser(cls.name, help=cls.help, description=cls.help, allow_abbrev=False)
        p.add_argument("-help", action="help", help=argparse.SUPPRESS)  # Nutch's spelling of --help
        add_arguments(p, cls.Args)
        add_common(p, crawl_id=cls.crawl)
    return parser


def _split_defines(argv: list[str]) -> list[str]:
    """`-Dkey=value` as `-D key=value`."""
    out: list[str] = []
    for a in argv:
        out += ["-D", a[2:]] if a.startswith("-D") and len(a) > 2 else [a]
    return out


def load_conf(args: argparse.Namespace) -> Configuration:
    defines = dict(parse_define(d) for d in [*args.global_defines, *getattr(args, "defines", [])])
    conf_dir = getattr(args, "conf_dir", None) or args.global_conf_dir
    return Configuration(Path(conf_dir) if conf_dir else None, defines)


def setup_logging(conf: Configuration, args: argparse.Namespace) -> None:
    """The levels (-v, -q, log.level, log.level.<logger>) and the log file of the command."""
    level = logs.check_level("log.level", conf.get_str("log.level"))
    if args.verbose:
        level = "DEBUG"
    elif args.quiet:
        level = "WARNING"
    levels = logs.check_levels(conf.with_prefix(logs.LEVEL_PREFIX))
    data = Path(conf.get_str("storage.data.dir"))
    folder = conf.get_str("hadoop.log.dir").strip()
    name = conf.get_str("hadoop.log.file").strip()
    logs.setup(level, Path(folder or data / "logs") / name if name else None, conf.get_float("log.file.max.size.mb"),
               conf.get_int("log.file.backups"), after=None if folder else data, levels=levels)


@contextmanager
def stop_on_signals(prog: str, resume: str, grace: float = 15.0) -> Iterator[None]:
    """SIGINT/SIGTERM: the first asks the work to stop (one line), a second one exits at once; both lines name
    the command that goes on (`resume`). Work in hand that has not ended `grace` seconds after the first (a store
    or server that does not answer) is left as a second signal leaves it: every job is safe to kill anywhere."""

    handling = {"now": False, "again": False}  # a second signal may run this handler inside the first one
    timers: list[threading.Event] = []  # set: the work ended in time

    def quit_now(why: str = "") -> None:
        log.warning(f"{prog}: stopped at once{why}; what was written is kept: run `{resume}` to go on")
        os._exit(130)

    def overdue() -> None:
        stuck = hangs.summary()  # a plugin's call that never returns, rather than a store or server
        quit_now(f": the work in hand did not end within {grace:g} s of the stop ("
                 + (f"{stuck}" if stuck else "a store or server that does not answer?") + ")")

    def handler(signum: int, _frame: object) -> None:
        if handling["now"]:  # arrived while the first one's line was written: quit once it is
            handling["again"] = True
            return
        if stop.requested():
            quit_now()
        handling["now"] = True
        try:
            n = stop.in_flight()
            what = ("the work in hand" if n is None else "the work in hand (no request in flight)" if n == 0
                    else f"{logs.counted(n, 'request')} in flight")
            log.info(f"{prog}: stopping: finishing {what}; {'Ctrl-C' if signum == signal.SIGINT else 'a signal'} "
                     "again to quit now")
            stop.request()
            timers.append(_after(grace, overdue))
        finally:
            handling["now"] = False
        if handling["again"]:
            quit_now()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for timer in timers:  # the work ended in time
            timer.set()
        for s, h in old.items():
            signal.signal(s, h)


def _after(seconds: float, fn: Callable[[], object]) -> threading.Event:
    """fn() in a daemon thread once `seconds` of this process's running time passed (the time it spent stopped,
    Ctrl-Z then `fg`, is not counted: nutch2/mapred/clock.py), unless the returned event is set first."""
    cancelled = threading.Event()
    deadline = clock.now() + seconds

    def wait() -> None:
        while not cancelled.wait(min(0.5, max(0.0, deadline - clock.now()))):
            if clock.now() >= deadline:
                fn()
                return

    threading.Thread(target=wait, name="stop-grace", daemon=True).start()
    return cancelled


def _store_failed_mid_job(e: NutchError, run: Run) -> bool:
    """A store that stopped answering after a job of the command started."""
    return isinstance(e, StoreUnavailable) and bool(run.jobs())


def resume_command(tool: Tool, argv: list[str]) -> str:
    extra = [f for f in tool.resume_flags() if f not in argv]
    return shlex.join(["nutch2", *argv, *extra])


def warn_rows_end_here(prog: str, conf: Configuration, tool: Tool) -> None:
    """A command that leaves rows in a store that keeps them only within this process (memory), which ends with
    it: one warning line (its rows end too)."""
    cls = store_class(conf)
    if not tool.crawl or cls.has(Capability.DURABLE):
        return
    try:
        with open_store(conf, tool.crawl_id, create=False) as store:
            n = store.count()
    except NutchError:
        return
    if n:
        rows = "the 1 row of this crawl is" if n == 1 else f"the {n} rows of this crawl are"
        steps = "" if tool.name == "crawl" else " (or run every step in one `nutch2 crawl`)"
        log.warning(f"{prog}: warning: storage.data.store.class={cls.name} keeps rows only within one process: "
                    f"{rows} gone once this command ends; use sqlite (the default) for a crawl that lasts{steps}")


def warn_gora_sqlstore(prog: str, conf: Configuration) -> None:
    """Gora's SqlStore, Nutch 2's default store (so in every nutch-default.xml copied as a nutch-site.xml), is
    PostgreSQL here: a user who did not choose a server hears it before the crawl goes there, or fails to."""
    value = conf.get_str("storage.data.store.class").strip()
    if not value.startswith("org.apache.gora."):
        return
    try:
        cls = store_class(conf)
    except NutchError:  # the command says it
        return
    if cls.name == "postgres" and value in cls.aliases:
        log.warning(f"{prog}: warning: storage.data.store.class={value} (Nutch 2's default) means PostgreSQL here, "
                    "at storage.postgres.url; remove the property to keep the crawl in sqlite, nutch2's default")


def main(argv: list[str] | None = None) -> int:
    """`nutch2 <argv>`; argv None: this process's own command line (the process ends with the command)."""
    limit_arenas()
    stop.reset()  # a command starts with no stop request (one run in a process that ran others: tests, a shell)
    standalone = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:  # Hadoop's spelling -Dkey=value is -D key=value (the parser takes no option with its value attached)
        ns, extra = parser.parse_known_args(_split_defines(argv))
    except SystemExit as e:  # usage errors (2) and --help (0) return instead of exiting the caller
        return int(e.code or 0)
    if not ns.command:  # bad usage: the usage goes where errors go
        parser.print_help(sys.stderr)
        return 2
    cls = TOOLS[ns.command]
    prog = f"nutch2 {cls.name}"
    if extra:
        print(f"{prog}: error: unrecognized arguments: {' '.join(extra)}{_nutch_hint(cls.name, extra)} "
              f"(see {prog} --help)", file=sys.stderr)
        return 2
    try:
        args = from_namespace(cls.Args, ns)
        for define in [*ns.global_defines, *getattr(ns, "defines", [])]:  # -D without key=value: bad usage too
            parse_define(define)
    except (ArgError, ConfigError) as e:
        print(f"{prog}: error: {e} (see {prog} --help)", file=sys.stderr)
        return 2
    stop.reset()
    tool: Tool | None = None
    run = Run()
    try:
        conf = load_conf(ns)
        setup_logging(conf, ns)
        for source in conf.sources:
            log.debug(f"conf: {source}")
        warn_gora_sqlstore(prog, conf)
        tool = cls(conf, getattr(ns, "crawl_id", None) if cls.crawl else None, args)
        if cls.name == "server":  # uvicorn handles the server's signals (and stops its jobs)
            return tool.execute(run)
        # the fetch promises to end within http.timeout of a stop; the rest of a job's work in hand is shorter
        with stop_on_signals(prog, resume_command(tool, argv), conf.get_int("http.timeout") / 1000 + 5):
            rc = tool.execute(run)
        if standalone and rc == 0:
            warn_rows_end_here(prog, conf, tool)
        return rc
    except stop.Stopped:
        run.stopped()  # what the job did until the stop
        resume = resume_command(tool, argv) if tool is not None else shlex.join(["nutch2", *argv])
        log.warning(f"{prog}: stopped; what was done is kept: run `{resume}` to go on")
        return 130
    except UsageError as e:
        log.error(str(e))
        return 2
    except WorkerDied as e:  # the same command goes on from what the job wrote (a fetch with -resume)
        resume = resume_command(tool, argv) if tool is not None else shlex.join(["nutch2", *argv])
        log.error(error_line(cls.name, NutchError(f"{e}: run `{resume}` to go on")))
        return 1
    except NutchError as e:  # one line naming the cause and the fix; a refusal names -force
        if _store_failed_mid_job(e, run) and tool is not None:  # the store went away: the command goes on later
            e = NutchError(f"{e}; once it answers again, run `{resume_command(tool, argv)}` to go on")
        log.error(error_line(cls.name, e))
        return 1
    except BrokenPipeError:  # `nutch2 readdb -stats | head`: the reader went away; say nothing
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except KeyboardInterrupt:
        log.warning(f"{prog}: interrupted")
        return 130


if __name__ == "__main__":  # `python -m nutch2.cli`
    sys.exit(main())
