"""Nutch 2's job API for the Searcher (`nutch2 server -jobs`): POST a job, GET its state, one job per crawl.

A job is the CLI command of the same name run in a child process (`python -m nutch2.cli <type> ...` with the
server's --conf, -D and -crawlId), so it takes the same locks, checks and exit codes as on a terminal and a
crash or a kill of it cannot take the server down. Its counters are read from the summary line every job
prints at the end (`<job>: finished in N s: k=v ...`); progress is its last log line.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import StoreLockedError
from nutch2.searcher.params import ParamError
from nutch2.stores import crawl_lock

JOB_TYPES = ("inject", "generate", "fetch", "parse", "updatedb", "index")
_BATCH_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$")
_SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$")
_KEEP = 100  # finished jobs remembered
# args each job type takes: name -> kind (bool, int, str, batch, path, urls)
_ARGS: dict[str, dict[str, str]] = {
    "inject": {"seedDir": "path", "seedUrls": "urls", "overwrite": "bool", "update": "bool"},
    "generate": {"topN": "int", "batchId": "batch", "noFilter": "bool", "noNorm": "bool", "adddays": "int",
                 "numTasks": "int"},
    "fetch": {"batch": "batch", "all": "bool", "threads": "int", "resume": "bool", "numTasks": "int"},
    "parse": {"batch": "batch", "all": "bool", "reparse": "bool", "resume": "bool", "force": "bool",
              "numTasks": "int"},
    "updatedb": {"batch": "batch", "all": "bool", "numTasks": "int"},
    "index": {"batch": "batch", "all": "bool", "reindex": "bool", "solr": "str", "numTasks": "int"},
}
_LOCKING = ("inject", "generate", "updatedb")


class JobConflict(ParamError):
    """Another job holds the crawl (HTTP 409)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 409)


@dataclass
class JobInfo:
    """One job, as GET /api/jobs/ID shows it (Nutch 2's JobInfo plus counters and progress)."""

    id: str
    type: str
    crawl_id: str | None
    args: dict[str, Any]
    argv: list[str]
    state: str = "RUNNING"  # RUNNING, FINISHED, FAILED, KILLED
    msg: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    last_line: str = ""
    started: float = field(default_factory=time.time)
    finished: float | None = None
    returncode: int | None = None
    proc: subprocess.Popen | None = None
    stop_requested: bool = False
    tmp_dir: str | None = None

    def to_json(self) -> dict[str, Any]:
        end = self.finished if self.finished is not None else time.time()
        return {"id": self.id, "type": self.type, "crawlId": self.crawl_id, "args": self.args,
                "state": self.state, "msg": self.msg, "result": self.result, "counters": self.counters,
                "progress": {"elapsedSeconds": round(end - self.started, 1), "lastLine": self.last_line},
                "error": self.msg if self.state == "FAILED" else None, "exitCode": self.returncode}


def _check_arg(job: str, name: str, kind: str, value: Any) -> Any:
    bad = ParamError(f"{job}: args.{name} must be {_KIND_TEXT[kind]}, not {value!r}"[:300])
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad
    elif kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad
    elif kind == "batch":
        if not isinstance(value, str) or not _BATCH_ID.match(value):
            raise bad
    elif kind == "urls":
        if (not isinstance(value, list) or not value or len(value) > 10_000
                or not all(isinstance(u, str) and u.strip() and "\n" not in u and "\r" not in u for u in value)):
            raise bad
    elif not isinstance(value, str) or not value.strip() or "\0" in value:
        raise bad
    return value


_KIND_TEXT = {"bool": "true or false", "int": "a whole number >= 0", "batch": "a batch id as generate printed it",
              "urls": "a list of URLs (one per seed)", "path": "a path on the server", "str": "a string"}


def build_argv(job: str, args: dict[str, Any], tmp: Path | None = None) -> tuple[list[str], bool]:
    """The CLI arguments of one job (without the program, conf and crawl id); (argv, needs a seed file)."""
    if job not in _ARGS:
        raise ParamError(f"unknown job type {job!r}; use one of {', '.join(JOB_TYPES)}")
    if not isinstance(args, dict):
        raise ParamError('args must be an object, e.g. {"batch": "1700000000-1234"}')
    allowed = _ARGS[job]
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise ParamError(f"{job} does not take {', '.join(unknown)}; it takes {', '.join(allowed)}")
    checked = {k: _check_arg(job, k, allowed[k], v) for k, v in args.items()}
    argv: list[str] = [job]
    if job == "inject":
        if ("seedDir" in checked) == ("seedUrls" in checked):
            raise ParamError("inject needs exactly one of args.seedDir (a seed file or folder on the server) "
                             "or args.seedUrls (a list of URLs)")
        if "seedDir" in checked:
            path = Path(checked["seedDir"]).expanduser().resolve()
            if not path.exists():
                raise ParamError(f"inject: args.seedDir {str(path)!r} does not exist on the server")
            argv.append(str(path))
        else:
            if tmp is None:
                return argv, True
            seeds = tmp / "seeds.txt"
            seeds.write_text("".join(u.strip() + "\n" for u in checked["seedUrls"]), encoding="utf-8")
            argv.append(str(seeds))
    elif job != "generate":
        chosen = [k for k in ("batch", "all", "reparse", "reindex") if checked.get(k) not in (None, False)]
        if len(chosen) != 1:
            extra = {"parse": ", args.reparse", "index": ", args.reindex"}.get(job, "")
            raise ParamError(f"{job} needs exactly one of args.batch (the id generate returned), "
                             f"args.all=true{extra}")
        if "batch" in checked:
            argv.append(checked["batch"])
    for name, value in checked.items():
        kind = allowed[name]
        if name in ("batch", "seedDir", "seedUrls"):
            continue
        if kind == "bool":
            if value:
                argv.append(f"-{name}")
        else:
            argv += [f"-{name}", str(value)]
    return argv, False


class JobManager:
    """Runs the API's jobs for one crawl, one at a time, and remembers the last ones."""

    def __init__(self, conf: Configuration, crawl_id: str | None, conf_argv: list[str],
                 solr: str | None = None) -> None:
        self.conf = conf
        self.crawl_id = crawl_id
        self.conf_argv = conf_argv  # --conf DIR and -D key=value of the server, passed on to every job
        self.solr = solr
        self._jobs: dict[str, JobInfo] = {}
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self.on_finish: Callable[[JobInfo], None] | None = None  # e.g. drop cached crawl stats

    def submit(self, job: str, args: dict[str, Any]) -> JobInfo:
        """Start a job; ParamError for bad args, JobConflict while another job runs on this crawl."""
        if not isinstance(job, str):
            raise ParamError(f"type must be one of {', '.join(JOB_TYPES)}")
        args = dict(args or {})
        if job == "index" and "solr" not in args and self.solr:
            args["solr"] = self.solr
        build_argv(job, args)  # validate before anything else happens
        with self._lock:
            running = [j for j in self._jobs.values() if j.state == "RUNNING"]
            if running:
                j = running[0]
                raise JobConflict(f"job {j.id} ({j.type}) is still running on this crawl; one job runs at a time, "
                                  f"wait for it (GET /api/jobs/{j.id}) or stop it")
            self._check_cli_lock(job)
            tmp = Path(tempfile.mkdtemp(prefix="nutch2-job-"))
            try:
                argv, _ = build_argv(job, args, tmp)
                cmd = [sys.executable, "-m", "nutch2.cli", *argv, *self.conf_argv]
                if self.crawl_id:
                    cmd += ["-crawlId", self.crawl_id]
                info = JobInfo(f"{self.crawl_id or 'webpage'}-{job}-{next(self._seq)}", job, self.crawl_id,
                               args, cmd, tmp_dir=str(tmp))
                info.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                             errors="replace", start_new_session=True)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            self._jobs[info.id] = info
            self._forget_old()
        threading.Thread(target=self._watch, args=(info,), name=f"job-{info.id}", daemon=True).start()
        return info

    def _check_cli_lock(self, job: str) -> None:
        """A CLI inject, generate or updatedb holding the crawl's lock: refuse now rather than fail later."""
        try:
            lock = crawl_lock(self.conf, self.crawl_id, job)
        except StoreLockedError as e:
            raise JobConflict(str(e)) from None
        lock.release()

    def _forget_old(self) -> None:
        done = [j for j in self._jobs.values() if j.state != "RUNNING"]
        for j in done[: max(0, len(self._jobs) - _KEEP)]:
            del self._jobs[j.id]

    def _watch(self, info: JobInfo) -> None:
        proc = info.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
        reader.start()
        lines: list[str] = []
        for raw in proc.stderr:
            for line in raw.replace("\r", "\n").splitlines():
                line = line.strip()
                if not line:
                    continue
                lines.append(line)
                del lines[:-200]
                info.last_line = line[:500]
                m = _SUMMARY.match(line)
                if m:
                    info.counters[m.group(1)] = _counters(m.group(2))
        rc = proc.wait()
        reader.join()
        info.returncode = rc
        stdout = [s.strip() for s in out if s.strip()]
        result, state, msg = _outcome(info, rc, stdout, lines)
        if info.tmp_dir:
            shutil.rmtree(info.tmp_dir, ignore_errors=True)
        if self.on_finish is not None:
            self.on_finish(info)
        info.result, info.msg, info.finished = result, msg, time.time()
        info.state = state  # last: a client that sees the job ended sees everything else too

    def get(self, job_id: str) -> JobInfo | None:
        return self._jobs.get(job_id)

    def all(self) -> list[JobInfo]:
        return sorted(self._jobs.values(), key=lambda j: j.started, reverse=True)

    def stop(self, job_id: str) -> JobInfo | None:
        """Interrupt a running job as Ctrl-C would (jobs can be killed at any point and run again)."""
        info = self._jobs.get(job_id)
        if info is not None and info.state == "RUNNING" and info.proc is not None:
            info.stop_requested = True
            try:
                info.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
        return info

    def shutdown(self, wait: float = 30.0) -> None:
        """Interrupt running jobs and wait for them (then kill what is left)."""
        running = [j for j in self._jobs.values() if j.state == "RUNNING" and j.proc is not None]
        for j in running:
            self.stop(j.id)
        deadline = time.monotonic() + wait
        for j in running:
            assert j.proc is not None
            try:
                j.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(j.proc.pid, signal.SIGKILL)


def _counters(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in text.split():
        k, sep, v = part.partition("=")
        if sep and v.lstrip("-").isdigit():
            out[k] = int(v)
    return out


def _outcome(info: JobInfo, rc: int, stdout: list[str], stderr: list[str]) -> tuple[dict[str, Any], str, str]:
    """(result, state, message) of a finished job from its exit code and output."""
    result: dict[str, Any] = {}
    if info.type == "generate":
        batch = stdout[-1] if rc == 0 and stdout else None
        result["batchId"] = batch
        if rc == 1 and not any("error:" in s for s in stderr):
            # the CLI's exit 1 without an error: nothing was due, no batch made
            return result, "FINISHED", stderr[-1] if stderr else "0 records selected for fetching"
    if info.stop_requested and rc != 0:
        return result, "KILLED", "stopped on request"
    if rc == 0:
        return result, "FINISHED", stdout[-1] if stdout else (stderr[-1] if stderr else "")
    errors = [s for s in stderr if "error:" in s]
    msg = errors[-1] if errors else (stderr[-1] if stderr else f"exit code {rc}")  # a traceback's last line
    return result, "FAILED", msg
