"""Nutch 2's job API for the Searcher (`nutch2 server -jobs`): POST a job, GET its state, one job at a time.

A job is a tool of the CLI (nutch2/tools) run in this process, in a thread of its own: the same arguments
(checked by the same declarations; GET /api/jobs/types gives their JSON schemas), locks, life-cycle rules and
exit codes as on a terminal. Its counters are the tool's own, read live while it runs. The request names no URL
and no path of the server: the index (Solr or OpenSearch) is the server's, seeds come in the body (`seedUrls`) or
are named inside the configured files folder (server.files.dir), which also receives what jobs write (dumps, WARC
files).
Job ids are random; jobs stop (as Ctrl-C would stop them) when asked and when the server stops.
What a job shows names nothing of the server's either: its args as the client sent them, and its messages with
the server's URLs and paths taken out (Redactor; the server's log keeps the whole text).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import secrets
import shlex
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError, StoreLockedError, StoreUnavailable, WorkerDied, error_line
from nutch2.index.opensearch import redacted, target_of_url
from nutch2.logs import clear_progress, last_progress
from nutch2.mapred import processes, stop
from nutch2.searcher.params import ParamError
from nutch2.stores import crawl_exists, crawl_lock
from nutch2.tools import TOOLS, job_types
from nutch2.tools.args import (
    ArgError,
    NoAbbrevParser,
    ToolArgs,
    add_arguments,
    from_json,
    from_namespace,
    in_folder,
    json_name,
    json_schema,
    opts,
)
from nutch2.tools.base import Run, Tool

log = logging.getLogger(__name__)

KEEP_JOBS = 100  # finished jobs remembered (GET /api/jobs lists them; /crawl/jobs pages them)


class JobConflict(ParamError):
    """Another job holds the crawl (HTTP 409)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 409)


_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_PATH = re.compile(r"(?<![\w.:/~>-])/(?:[^\s'\"/<>]+/)*[^\s'\"/<>,;:)]+")


class Redactor:
    """Takes the server's URLs and paths out of what the job API shows: names inside the files folder stay as
    the client gave them, the Solr or OpenSearch URL and the data folder become words; in an error every other URL
    and absolute path goes too (the server's log keeps the whole text)."""

    def __init__(self, solr: str | None = None, files_dir: Path | None = None, data_dir: str | None = None,
                 opensearch: str | None = None) -> None:
        known: list[tuple[str, str]] = []
        if files_dir is not None:
            known += [(f"{p}/", "") for p in {str(files_dir.resolve()), str(files_dir)}]
        if solr:  # as given, and without its password as messages name it
            known += [(url, "<solr>") for url in {solr.rstrip("/"), redacted(solr).rstrip("/")}]
        if opensearch:  # as given, without its password, and the cluster's URL messages name
            target = target_of_url(opensearch)
            for url in {opensearch.rstrip("/"), redacted(opensearch).rstrip("/"), f"{target.url}/{target.index}"}:
                known.append((url, "<opensearch>"))
            known.append((target.url, "<opensearch>"))
        if data_dir:
            known.append((data_dir.rstrip("/"), "<data>"))
        self.known = sorted(known, key=lambda kv: -len(kv[0]))  # longest first: a folder inside another

    def text(self, value: str, strict: bool = False) -> str:
        for secret, word in self.known:
            value = value.replace(secret, word)
        if strict:
            value = _PATH.sub("<path>", _URL.sub("<url>", value))
        return value

    def value(self, value: Any) -> Any:
        """Strings inside results (lists, dicts) with the server's own URLs and paths taken out."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value


@dataclass
class JobInfo:
    """One job, as GET /api/jobs/ID shows it (Nutch 2's JobInfo plus counters and progress)."""

    id: str
    type: str
    crawl_id: str | None
    args: dict[str, Any]
    run: Run = field(default_factory=lambda: Run(emit=lambda _line: None))
    state: str = "RUNNING"  # RUNNING, FINISHED, FAILED, KILLED
    msg: str = ""
    started: float = field(default_factory=time.time)
    finished: float | None = None
    returncode: int | None = None
    stop_requested: bool = False
    with_server: bool = False  # stopped because the server stops
    thread: threading.Thread | None = None
    redactor: Redactor = field(default_factory=Redactor)
    conf: dict[str, Any] = field(default_factory=dict)  # the properties the job set for itself, as sent

    def to_json(self) -> dict[str, Any]:
        end = self.finished if self.finished is not None else time.time()
        progress = last_progress() if self.state == "RUNNING" else ""
        failed = self.state == "FAILED"
        msg = self.redactor.text(self.msg or self.run.message, strict=failed)
        return {"id": self.id, "type": self.type, "crawlId": self.crawl_id, "args": self.args,
                "state": self.state, "msg": msg, "result": self.redactor.value(dict(self.run.values)),
                "counters": self.run.counters_json(),
                "progress": {"elapsedSeconds": round(end - self.started, 1),
                             "lastLine": self.redactor.text(progress)},
                "error": msg if failed else None, "exitCode": self.returncode}


_DEFINE = re.compile(r"\bwith -D ([\w.-]+)=(\S+?)([,;)]|\s|$)")


def _resume_advice(tool: Tool) -> str:
    """How a job of the API goes on from what a failed run of it wrote (a fetch or parse with "resume": true)."""
    names = {o.flag: json_name(f) for f, o, _, _ in opts(tool.Args) if o.flag}
    extra = [f'"{names[flag]}": true' for flag in tool.resume_flags() if flag in names]
    return f"submit the same job{' with ' + ', '.join(extra) + ' in its args' if extra else ''} to go on"


_COMMAND = re.compile(r"`nutch2 ([a-z]+)([^`]*)`")


def as_job_advice(message: str) -> str:
    """A command's advice as a job of the API takes it: "with -D key=value" as the job's conf, and a command to
    copy (`nutch2 fetch B -resume -crawlId X`) as the job to submit."""
    message = _COMMAND.sub(_as_job, message).replace("give -force", 'give "force": true in the args') \
        .replace("(or use -all)", '(or give "all": true in the args)')
    return _DEFINE.sub(lambda m: f'with "conf": {{"{m.group(1)}": "{m.group(2)}"}} in the job{m.group(3)}', message)


def _as_job(m: re.Match[str]) -> str:
    """`nutch2 <tool> <flags>` as the job to submit, `{"type": ..., "args": ...}` (unchanged when it is no job)."""
    name = m.group(1)
    cls = TOOLS.get(name)
    if cls is None or not cls.job:
        return m.group(0)
    try:
        words = shlex.split(m.group(2))
        if "-crawlId" in words:  # the server's own crawl
            i = words.index("-crawlId")
            del words[i:i + 2]
        parser = NoAbbrevParser(prog=name, add_help=False)
        add_arguments(parser, cls.Args)
        ns, extra = parser.parse_known_args(words)
        if extra:
            return m.group(0)
        args = from_namespace(cls.Args, ns).to_json()
    except (SystemExit, NutchError, ValueError):
        return m.group(0)
    return f"the job `{json.dumps({'type': name, 'args': args})}`" if args else f"a {name} job"


def as_api_args(message: str, cls: type[ToolArgs]) -> str:
    """An argument error in the command line's words (`-all`, `<batchId>`, `OUTDIR`) in the job API's (`args.all`,
    `args.batch`, `args.outdir`): the names the client sends."""
    words = {}
    for f, o, _, _ in opts(cls):
        # a flag, else a positional argument's placeholder (OUTDIR, <batchId>; a flag's metavar is its value's)
        word = o.flag or (o.metavar if o.metavar and (o.metavar.isupper() or o.metavar.startswith("<")) else None)
        if word and o.api != "no":
            words[word] = f"args.{json_name(f)}"
    if not words:
        return message
    names = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.sub(rf"(?<![\w.-])(?:{names})(?![\w>-])", lambda m: words[m.group(0)], message)


def types_json() -> dict[str, Any]:
    """Every job type with its help and the JSON schema of its args."""
    return {name: {"help": TOOLS[name].help, "args": json_schema(TOOLS[name].Args)} for name in job_types()}


class JobManager:
    """Runs the API's jobs for one crawl, one at a time, and remembers the last ones."""

    def __init__(self, conf: Configuration, crawl_id: str | None, solr: str | None = None,
                 files_dir: Path | None = None, opensearch: str | None = None) -> None:
        self.conf = conf
        self.crawl_id = crawl_id
        self.solr = solr
        self.opensearch = opensearch  # the server searches OpenSearch: jobs index there, not into Solr
        self.files_dir = files_dir
        self._jobs: dict[str, JobInfo] = {}
        self._lock = threading.Lock()
        self.listeners: list[Callable[[JobInfo, str], None]] = []  # told when a job ends, with its state
        self.redactor = Redactor(solr, files_dir, conf.get_str("storage.data.dir"), opensearch)
        self._stopping_since: float | None = None  # when the server first asked its job to stop with it

    def build(self, job: Any, args: Any, conf: Any = None) -> tuple[Tool, ToolArgs, dict[str, Any]]:
        """The tool of a request, its args checked (ParamError naming what is wrong), and the args as the client
        sent them (what the API shows: no path of the files folder, no Solr URL). `conf`: properties the job sets
        for itself (server.jobs.conf.allow says which)."""
        types = job_types()
        if not isinstance(job, str) or job not in types:
            raise ParamError(f"unknown job type {str(job)[:40]!r}; use one of {', '.join(types)}")
        cls = TOOLS[job]
        job_conf = self.job_conf(conf)
        try:
            sent = from_json(cls.Args, args if args is not None else {})
            checked = in_folder(sent, self.files_dir)
        except ArgError as e:
            raise ParamError(f"{job}: {as_api_args(str(e), cls.Args)}") from None
        names = {f.name for f in dataclasses.fields(checked)}
        if "solr" in names and (job != "crawl" or checked.index):
            checked = self._index_of_server(job, checked, names)
        return cls(job_conf, self.crawl_id if cls.crawl else None, checked), checked, sent.to_json()

    def _index_of_server(self, job: str, args: ToolArgs, names: set[str]) -> ToolArgs:
        """The args of a job that writes to the index, pointed at the server's: its OpenSearch index (Solr off,
        and a crawl's index flag, which means Solr, off too) or its Solr core."""
        if self.opensearch:
            if "opensearch" not in names:
                raise ParamError(f"{job} works on Solr only, and this server's index is OpenSearch; run it from "
                                 "the command line")
            off = {"index": False} if "index" in names else {}
            return dataclasses.replace(args, solr=None, opensearch=self.opensearch, **off)  # type: ignore[type-var]
        if not self.solr:
            raise ParamError(f"{job} needs Solr: start the server with -solr")
        return dataclasses.replace(args, solr=self.solr)  # type: ignore[type-var]

    def job_conf(self, props: Any) -> Configuration:
        """The server's configuration with the job's own properties (Nutch 2's job config), each one allowed by
        server.jobs.conf.allow and checked as -D would check it. A client's seeds on this machine's network are
        not let through the address guard (inject.seeds.allow.local false): what the server's
        fetcher.address.allow lists is."""
        conf = self.conf.copy()
        conf.set("inject.seeds.allow.local", False)
        conf.set("mapreduce.processes.driver.task", False)  # no task's long call can hold the server's threads
        if not props:
            return conf
        example = '{"http.agent.name": "MyBot"}'
        if not isinstance(props, dict):
            raise ParamError(f"conf must be an object of properties, e.g. {example}")
        allow = re.compile(self.conf.get_str("server.jobs.conf.allow"))
        for key, value in props.items():
            if not allow.fullmatch(key):
                raise ParamError(f"conf.{key[:80]}: a job cannot set this property (server.jobs.conf.allow lists "
                                 "those it can); set it with -D when starting the server")
            if not isinstance(value, (str, int, float, bool)):
                raise ParamError(f"conf.{key}: give a string, number or boolean")
            try:
                conf.check_not_final(key, "a job's conf")  # as -D cannot (Hadoop's final)
                conf.set(key, value)
            except ConfigError as e:
                raise ParamError(f"conf.{key}: {e}") from None
        return conf

    def submit(self, job: Any, args: Any, conf: Any = None) -> JobInfo:
        """Start a job; ParamError for bad args or conf, JobConflict while another job runs."""
        tool, _, shown = self.build(job, args, conf)
        with self._lock:
            running = [j for j in self._jobs.values() if j.state == "RUNNING"]
            if running:
                j = running[0]
                raise JobConflict(f"job {j.id} ({j.type}) is still running on this crawl; one job runs at a time, "
                                  f"wait for it (GET /api/jobs/{j.id}) or stop it")
            if tool.crawl_lock:
                self._check_cli_lock(job, tool.creates)
            info = JobInfo(secrets.token_urlsafe(12), job, self.crawl_id, shown, redactor=self.redactor,
                           conf=dict(conf) if isinstance(conf, dict) else {})
            self._jobs[info.id] = info
            self._forget_old()
            stop.reset()
            clear_progress()
            info.thread = threading.Thread(target=self._run, args=(info, tool), name=f"job-{job}", daemon=True)
            info.thread.start()
        return info

    def _check_cli_lock(self, job: str, creates: bool) -> None:
        """A CLI inject, generate or updatedb holding the crawl's lock: refuse now rather than fail later. A crawl
        not made yet is left to the job that may create it (inject makes it only when it writes a row)."""
        if creates and crawl_exists(self.conf, self.crawl_id) is False:
            return
        try:
            lock = crawl_lock(self.conf, self.crawl_id, job, create=creates)
        except StoreLockedError:  # its message names the lock's file: the server's business, not the client's
            raise JobConflict(f"{job}: another job (inject, generate or updatedb) holds this crawl's lock; wait for "
                              "it to finish") from None
        lock.release()

    def _forget_old(self) -> None:
        done = [j for j in self._jobs.values() if j.state != "RUNNING"]
        for j in done[: max(0, len(self._jobs) - KEEP_JOBS)]:
            del self._jobs[j.id]

    def _run(self, info: JobInfo, tool: Tool) -> None:
        state, msg = "FINISHED", ""
        try:
            code = tool.execute(info.run)
            if code != 0 and not (info.type == "generate" and code == 1):
                state, msg = "FAILED", info.run.message or f"exit code {code}"
            if info.type == "generate" and code == 1:
                info.run.values.setdefault("batchId", None)
                msg = "0 URLs selected for fetching"
        except stop.Stopped:
            code, state, msg = 130, "KILLED", "stopped on request"
            if info.with_server:
                msg = ("stopped with the server: what it did is kept; once the server is back, start the same job "
                       "again and it goes on from there")
        except WorkerDied as e:
            code, state, msg = 1, "FAILED", f"{error_line(info.type, e)}: {_resume_advice(tool)}"
        except NutchError as e:
            line = error_line(info.type, e)
            if isinstance(e, StoreUnavailable) and info.run.jobs():  # the store went away mid-job, as the CLI says
                line = f"{line}; once it answers again, {_resume_advice(tool)}"
            code, state, msg = 1, "FAILED", as_job_advice(line)
        except Exception as e:  # noqa: BLE001 - a bug must not take the server down; its traceback is logged
            log.error(f"job {info.id} ({info.type}) failed: {traceback.format_exc()}")
            code, state, msg = 1, "FAILED", f"nutch2 {info.type}: internal error: {type(e).__name__}"
        # the whole message, the server's paths and URLs included, for the operator
        log.log(logging.ERROR if state == "FAILED" else logging.INFO,
                f"server: job {info.id} ({info.type}) {state}: {msg or info.run.message}")
        for listener in self.listeners:  # the metrics: before the job shows it ended
            try:
                listener(info, state)
            except Exception:  # noqa: BLE001 - the job's end is recorded whatever a listener does
                log.error(f"job {info.id}: a listener failed: {traceback.format_exc()}")
        info.returncode = code
        info.msg, info.finished = msg, time.time()
        info.state = state  # last: a client that sees the job ended sees everything else too

    def get(self, job_id: str) -> JobInfo | None:
        return self._jobs.get(job_id)

    def all(self) -> list[JobInfo]:
        return sorted(self._jobs.values(), key=lambda j: j.started, reverse=True)

    def stop(self, job_id: str) -> JobInfo | None:
        """Stop a running job as Ctrl-C would (every job can be stopped and run again); one whose tasks have not
        ended http.timeout + 5 s later (a call that holds a worker's interpreter, a store that does not answer) is
        ended by killing its worker processes, as a second Ctrl-C ends a command."""
        info = self._jobs.get(job_id)
        if info is not None and info.state == "RUNNING":
            if not info.stop_requested:
                grace = self.conf.get_int("http.timeout") / 1000 + 5
                timer = threading.Timer(grace, self._overdue, args=(info, grace))
                timer.daemon = True
                timer.start()
            info.stop_requested = True
            stop.request()
        return info

    @staticmethod
    def _overdue(info: JobInfo, grace: float) -> None:
        if info.state == "RUNNING" and (n := processes.kill_workers()):
            log.warning(f"server: job {info.id} ({info.type}) did not stop within {grace:g} s: killed its "
                        f"{n} worker process(es); what it wrote is kept and the same job goes on from it")

    def stop_with_server(self) -> list[JobInfo]:
        """Ask the running job to stop because the server stops (its message says so); the jobs asked."""
        running = [j for j in self._jobs.values() if j.state == "RUNNING"]
        for j in running:
            if not j.with_server:
                log.info(f"server: stopping job {j.id} ({j.type}) with the server")
            j.with_server = j.stop_requested = True
        if running:
            stop.request()
            if self._stopping_since is None:
                self._stopping_since = time.monotonic()
        return running

    def shutdown(self, wait: float = 30.0) -> None:
        """Stop the running job and wait for it to end, `wait` seconds at most since the server first asked (its
        work is safe to resume whenever it ends)."""
        running = self.stop_with_server()
        deadline = (self._stopping_since or time.monotonic()) + wait
        for j in running:
            if j.thread is not None:
                j.thread.join(max(0.1, deadline - time.monotonic()))
                if j.thread.is_alive():  # what it did is kept, as after a kill: the same job resumes it
                    log.warning(f"server: job {j.id} ({j.type}) did not stop within {wait:.0f} s; it ends "
                                "with the server")
