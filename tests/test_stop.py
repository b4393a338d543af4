"""Stopping like a trusted batch system: SIGINT or SIGTERM during fetch, parse, updatedb and crawl (on sqlite,
the processes runner and every service store) ends the command within http.timeout + 5 s with exit 130, one
"stopping" line and the command that resumes; that command then finishes the work to exactly the rows of an
uninterrupted run, requesting no page twice. A second signal exits at once, and the rerun is still exact. A stop
with a slow request in flight lets it end, starts no other request, and writes what it got. The log file says
what happened."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.conftest import STORE_BACKENDS
from tests.crawlutil import conf_for, defines, seed_file
from tests.helpers import build_batch, fetched_batch, nutch2, page_requests, same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
HTTP_TIMEOUT_MS = 5000  # what tests.crawlutil.defines sets
BOUND = HTTP_TIMEOUT_MS / 1000 + 5  # seconds a stopped command may take to end
SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM}
TWICE = "INT+TERM"  # Ctrl-C, then a SIGTERM (a service manager's) before the stop is done: exit at once
SERVICES = [b for b in STORE_BACKENDS if b not in ("memory", "sqlite")]


def _cases(*local: tuple[str, str]) -> list[tuple[str, str]]:
    """The given local cases, then each service store with alternating signals."""
    return [*local, *((b, ("TERM", "INT")[i % 2]) for i, b in enumerate(SERVICES))]


class Command:
    """`nutch2 args` in a child process whose stderr is read as it comes."""

    def __init__(self, args: list[object]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", *map(str, args)], cwd=REPO, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.err: list[str] = []
        self._reader = threading.Thread(target=lambda: self.err.extend(iter(self.proc.stderr.readline, "")),
                                        daemon=True)  # type: ignore[union-attr]
        self._reader.start()

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 120
        while self.proc.poll() is None and not ready():
            assert time.monotonic() < deadline, f"{what} never happened:\n{''.join(self.err)}"
            time.sleep(0.02)
        assert self.proc.poll() is None, f"the command ended before {what}: give it more work\n{''.join(self.err)}"

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.err))

    def end(self) -> subprocess.CompletedProcess[str]:
        """Wait at most BOUND seconds for the end (from the stop)."""
        try:
            self.proc.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running {BOUND:.0f} s after the signal:\n{''.join(self.err)}") from None
        out = self.proc.stdout.read()  # type: ignore[union-attr]
        self._reader.join(10)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, "".join(self.err))


def stop_when(args: list[object], ready: Callable[[], bool], how: str) -> subprocess.CompletedProcess[str]:
    """Start `nutch2 args`, send the signal(s) `how` names once `ready()` holds, wait for the end. Two signals
    (TWICE) are sent while the process is held still (SIGSTOP), so both reach it while the work runs."""
    cmd = Command(args)
    cmd.wait_until(ready, "the work getting under way")
    pid = cmd.proc.pid
    if how == TWICE:
        os.kill(pid, signal.SIGSTOP)
        os.kill(pid, signal.SIGINT)
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
    else:
        os.kill(pid, SIGNALS[how])
    return cmd.end()


def resume(stopped: subprocess.CompletedProcess[str], job: str, at_once: bool = False) -> list[str]:
    """Check the stop's lines; the arguments of the command it names to go on."""
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert re.search(rf"^nutch2 {job}: stopping: finishing .*; (Ctrl-C|a signal) again to quit now$", stopped.stderr,
                     re.M), stopped.stderr
    how = "stopped at once; what was written is kept" if at_once else "stopped; what was done is kept"
    m = re.search(rf"^nutch2 {job}: {how}: run `(nutch2 .*)` to go on$", stopped.stderr, re.M)
    assert m, stopped.stderr
    return shlex.split(m.group(1))[1:]


def logged(tmp: Path, stopped: subprocess.CompletedProcess[str]) -> None:
    """The log file has the stop's lines too (with their time and level)."""
    lines = (tmp / "crawl" / "logs" / "hadoop.log").read_text().splitlines()
    for line in stopped.stderr.splitlines():
        if ": stopp" in line:
            assert any(x.endswith(line) for x in lines), (line, lines[-5:])


def twice(web: TestWeb) -> list[tuple[str, str]]:
    """Pages requested twice: those in flight when the command exited at once, requested once more by the rerun
    (nutch2/fetch/fetchclaim.py); none more than twice."""
    counts = page_requests(web)
    assert not counts or max(counts.values()) <= 2, counts.most_common(3)
    return [u for u, n in counts.items() if n == 2]


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=30, traps=False) as w:
        yield w


# ---------------------------------------------------------------------------------------------------- fetch
def _generated(tmp: Path, web: TestWeb, crawl_id: str, d: list[str], hosts: int = 3) -> None:
    seeds = seed_file(tmp, *[web.page_url(h, i) for h in range(hosts) for i in range(30)])
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    assert nutch2("generate", "-batchId", "B", "-crawlId", crawl_id, *d).stdout.strip() == "B"


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "how"), _cases(("sqlite:local", "INT"), ("sqlite:local", "TERM"),
                                                    ("sqlite", "INT")))
def test_a_signal_stops_fetch_and_the_resume_command_finishes_it_exactly(web: TestWeb, tmp_path: Path,
                                                                         backend: str, how: str) -> None:
    props = {"fetcher.server.delay": 0.3, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    ref, crawl_id = f"fr{uuid.uuid4().hex[:8]}", f"fs{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        _generated(tmp_path, web, cid, d)
    assert nutch2("fetch", "B", "-crawlId", ref, *d).returncode == 0
    web.reset_log()
    args = ["fetch", "B", "-crawlId", crawl_id, *d]
    stopped = stop_when(args, lambda: sum(page_requests(web).values()) >= 12, how)
    again = resume(stopped, "fetch")
    assert "-resume" in again
    # any runner: how many requests are in flight, or that none is
    assert re.search(r": stopping: finishing (\d+ requests? in flight|the work in hand \(no request in flight\));",
                     stopped.stderr), stopped.stderr
    logged(tmp_path, stopped)
    done = sum(1 for p in table(conf, crawl_id).values() if Mark.FETCH.check(p))
    assert 12 <= done < 90  # what was fetched was written; the rest was left for -resume
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    assert max(page_requests(web).values()) == 1  # no page requested twice
    same_rows(table(conf, crawl_id), table(conf, ref))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite:local", "sqlite"])
def test_ctrl_c_twice_exits_at_once_and_the_rerun_is_still_exact(web: TestWeb, tmp_path: Path, backend: str) -> None:
    """The first Ctrl-C waits for the slow requests in flight; the second, while they are, exits at once."""
    props = {"fetcher.server.delay": 0.1, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    ref, crawl_id = f"tr{uuid.uuid4().hex[:8]}", f"tw{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        _generated(tmp_path, web, cid, d)
    assert nutch2("fetch", "B", "-crawlId", ref, *d).returncode == 0
    web.reset_log()
    web.page_delay = 2.0
    try:
        cmd = Command(["fetch", "B", "-crawlId", crawl_id, *d])
        cmd.wait_until(lambda: len(page_requests(web)) >= 3 and any(time.monotonic() - arrived < 0.5
                                                                    for _, _, arrived in web.pending()),
                       "a slow request just sent")
        os.kill(cmd.proc.pid, signal.SIGINT)
        cmd.wait_until(lambda: cmd.said(": stopping: finishing "), "the stopping line")
        assert web.pending(), "the slow request ended before the second Ctrl-C: make it slower"
        os.kill(cmd.proc.pid, signal.SIGINT)
        stopped = cmd.end()
    finally:
        web.page_delay = 0.0
    again = resume(stopped, "fetch", at_once=True)
    assert "-resume" in again
    logged(tmp_path, stopped)
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    # exiting at once is a kill: the requests in flight then had no answer; the rerun takes their claims over and
    # requests them once more, so every row is the uninterrupted run's
    assert 1 <= len(twice(web)) <= 3  # the slow requests in flight: one per host (fetcher.threads.per.queue)
    assert re.search(r"refetched_in_flight=[123]\b", rerun.stderr), rerun.stderr
    same_rows(table(conf, crawl_id), table(conf, ref))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite:local", "sqlite"])
def test_a_stop_lets_a_slow_request_end_and_starts_no_other(web: TestWeb, tmp_path: Path, backend: str) -> None:
    """One host, one request at a time, each answered 2 s late: SIGINT while one is in flight. The command ends
    within http.timeout + 5 s, that request is answered and written, no request starts after the signal, and
    the resume command fetches the rest exactly."""
    props = {"fetcher.server.delay": 0.1, "fetcher.write.batch.size": 1}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    ref, crawl_id = f"sr{uuid.uuid4().hex[:8]}", f"ss{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        _generated(tmp_path, web, cid, d, hosts=1)
    assert nutch2("fetch", "B", "-crawlId", ref, *d).returncode == 0
    web.reset_log()
    web.page_delay = 2.0
    try:
        cmd = Command(["fetch", "B", "-crawlId", crawl_id, *d])
        # the third page in flight for a while (the processes runner's workers report every 0.2 s)
        cmd.wait_until(lambda: len(page_requests(web)) >= 2 and any(time.monotonic() - arrived > 0.5
                                                                     for _, _, arrived in web.pending()),
                       "a slow request in flight")
        (host, path, _), = web.pending()
        signalled = time.monotonic()
        os.kill(cmd.proc.pid, signal.SIGINT)
        stopped = cmd.end()
    finally:
        web.page_delay = 0.0
    again = resume(stopped, "fetch")
    assert ": stopping: finishing 1 request in flight;" in stopped.stderr, stopped.stderr
    assert not [r for r in web.requests() if r.arrived > signalled]  # nothing started after the signal
    slow = table(conf, crawl_id)[reverse_url(f"http://{host}:{web.port}{path}")]
    assert Mark.FETCH.check(slow) == "B" and slow.content  # the request in flight ended and was written
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    assert max(page_requests(web).values()) == 1
    same_rows(table(conf, crawl_id), table(conf, ref))


# ---------------------------------------------------------------------------------------------------- parse
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "how"), _cases(("sqlite:local", "TERM"), ("sqlite", "INT"),
                                                    ("sqlite", TWICE)))
def test_a_signal_stops_parse_and_the_resume_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                         how: str) -> None:
    props = {"storage.write.batch.size": 20, "storage.hbase.batch.size": 20}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    n = 1500 if backend.startswith("sqlite") else 800
    ref, crawl_id = f"pr{uuid.uuid4().hex[:8]}", f"ps{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        fetched_batch(conf, cid, n)
    assert nutch2("parse", "B", "-crawlId", ref, *d).returncode == 0

    def parsed() -> int:
        with open_store(conf, crawl_id, create=False) as store:
            return store.count(mark=(Mark.PARSE.value, "B"))

    stopped = stop_when(["parse", "B", "-crawlId", crawl_id, *d], lambda: parsed() >= 40, how)
    again = resume(stopped, "parse", at_once=how == TWICE)
    assert "-resume" in again and 40 <= parsed() < n
    logged(tmp_path, stopped)
    assert nutch2(*again).returncode == 0
    same_rows(table(conf, crawl_id), table(conf, ref))


# ---------------------------------------------------------------------------------------------------- updatedb
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "how"), _cases(("sqlite:local", "INT"), ("sqlite", "TERM"),
                                                    ("sqlite", TWICE)))
def test_a_signal_stops_updatedb_and_the_same_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                          how: str) -> None:
    props = {"storage.write.batch.size": 20, "storage.hbase.batch.size": 20}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    sources = 240 if backend.startswith("sqlite") else 120
    ref, crawl_id = f"ur{uuid.uuid4().hex[:8]}", f"us{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        build_batch(conf, cid, sources)
    assert nutch2("updatedb", "B", "-crawlId", ref, *d).returncode == 0

    def grown() -> bool:
        with open_store(conf, crawl_id, create=False) as store:
            return store.count() >= 60 + sources + 100

    stopped = stop_when(["updatedb", "B", "-crawlId", crawl_id, *d], grown, how)
    again = resume(stopped, "updatedb", at_once=how == TWICE)
    logged(tmp_path, stopped)
    assert nutch2(*again).returncode == 0
    same_rows(table(conf, crawl_id), table(conf, ref))


# ---------------------------------------------------------------------------------------------------- crawl
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("backend", "how"), _cases(("sqlite:local", "TERM"), ("sqlite", "INT"),
                                                    ("sqlite", TWICE)))
def test_a_signal_stops_crawl_and_the_same_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                       how: str) -> None:
    props = {"fetcher.server.delay": 0.2, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    with TestWeb(hosts=3, pages_per_host=25, traps=False) as web:
        seeds = seed_file(tmp_path, web.seed_url)
        ref, crawl_id = f"cr{uuid.uuid4().hex[:8]}", f"cs{uuid.uuid4().hex[:8]}"
        args = ["crawl", seeds, "-rounds", 3, "-topN", 30]
        assert nutch2(*args, "-crawlId", ref, *d).returncode == 0
        expected, ref_names = table(conf, ref), _round_names(conf, ref)
        web.reset_log()
        stopped = stop_when([*args, "-crawlId", crawl_id, *d], lambda: sum(page_requests(web).values()) >= 10, how)
        again = resume(stopped, "crawl", at_once=how == TWICE)
        assert again == [str(a) for a in [*args, "-crawlId", crawl_id, *d]]  # the same command
        logged(tmp_path, stopped)
        rerun = nutch2(*again)
        assert rerun.returncode == 0, rerun.stderr
        assert not twice(web) or how == TWICE  # exited at once in a fetch: its requests in flight, once more
        same_rows(table(conf, crawl_id), expected, _round_names(conf, crawl_id), ref_names)


def _round_names(conf, crawl_id: str) -> dict[str, str]:
    from nutch2.crawldb.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


# ---------------------------------------------------------------------------------------------------- spark
@pytest.mark.timeout(400)
def test_a_signal_stops_a_fetch_on_spark_and_resume_requests_nothing_twice(web: TestWeb, tmp_path: Path) -> None:
    """On Spark a stop cancels the job's tasks (in the executors, as a kill would end them): the command still
    ends within the bound with 130 and the resume command; what was claimed but not answered is requested once
    more (tests/test_spark.py), nothing else twice."""
    pytest.importorskip("pyspark")
    props = {"fetcher.server.delay": 0.3, "mapreduce.framework.name": "spark", "spark.master": "local[2]",
             "spark.ui.enabled": "false", "fetcher.threads.fetch": 4}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    _generated(tmp_path, web, "sp", d)
    web.reset_log()
    stopped = stop_when(["fetch", "B", "-crawlId", "sp", *d], lambda: sum(page_requests(web).values()) >= 10, "INT")
    again = resume(stopped, "fetch")
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    assert len(twice(web)) <= 2 * 4  # at most the requests in flight (threads of the two tasks)
    rows = table(conf, "sp")
    assert all(Mark.FETCH.check(p) == "B" and p.status == CrawlStatus.FETCHED for p in rows.values())


def test_a_second_signal_during_the_first_ones_line_still_quits_at_once(monkeypatch, capsys) -> None:
    """Two signals delivered together (the TWICE cases above) can run the handler inside itself, while the first
    call writes its line: the second must still quit at once, after that line, not log a second first stop."""
    from nutch2 import cli
    from nutch2.mapred import stop

    class Quit(Exception):
        pass

    def exit_(code: int) -> None:
        raise Quit(code)

    monkeypatch.setattr(cli.os, "_exit", exit_)
    lines: list[str] = []
    inner: list[Callable[[], None]] = []

    def log(line: str) -> None:
        lines.append(line)
        while inner:  # the second signal arrives while this line is written
            inner.pop()()

    monkeypatch.setattr(cli.log, "info", log)  # the lines of the CLI's logger
    monkeypatch.setattr(cli.log, "warning", lambda line: lines.append(line))
    stop.reset()
    try:
        with cli.stop_on_signals("nutch2 crawl", "nutch2 crawl seeds"):
            handler = signal.getsignal(signal.SIGTERM)
            inner.append(lambda: handler(signal.SIGTERM, None))
            with pytest.raises(Quit, match="130"):
                handler(signal.SIGINT, None)
    finally:
        stop.reset()
    assert [line.split(": ")[1].split(";")[0] for line in lines] == ["stopping", "stopped at once"], lines


def test_work_in_hand_that_outlasts_the_grace_after_a_stop_is_left_at_once(monkeypatch) -> None:
    """A store or server that stops answering keeps a job's last write waiting for ever: the first signal's stop
    then ends the command `grace` seconds later, as a second signal would (every job is safe to kill anywhere).
    Work that ends in time cancels it."""
    from nutch2 import cli
    from nutch2.mapred import stop

    exits: list[int] = []
    lines: list[str] = []
    monkeypatch.setattr(cli.os, "_exit", exits.append)
    monkeypatch.setattr(cli.log, "info", lines.append)
    monkeypatch.setattr(cli.log, "warning", lines.append)
    stop.reset()
    try:
        with cli.stop_on_signals("nutch2 updatedb", "nutch2 updatedb B", grace=0.2):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
            deadline = time.monotonic() + 10
            while not exits and time.monotonic() < deadline:  # the work in hand hangs
                time.sleep(0.02)
        assert exits == [130]
        assert lines[-1] == ("nutch2 updatedb: stopped at once: the work in hand did not end within 0.2 s of the "
                             "stop (a store or server that does not answer?); what was written is kept: run "
                             "`nutch2 updatedb B` to go on")
        stop.reset()
        exits.clear()
        with cli.stop_on_signals("nutch2 updatedb", "nutch2 updatedb B", grace=0.2):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # the work ends at once
        time.sleep(0.5)
        assert exits == []
    finally:
        stop.reset()


def test_the_grace_after_a_stop_does_not_count_time_the_command_was_stopped(tmp_path) -> None:
    """Ctrl-C, then Ctrl-Z, then `fg` later than the grace: the command went on waiting for its work in hand
    rather than quitting the moment it ran again (the grace measured the time it was stopped too)."""
    import subprocess
    import sys

    script = tmp_path / "hang.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from nutch2 import cli\n"
        "with cli.stop_on_signals('nutch2 updatedb', 'nutch2 updatedb B', grace=5):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    print('stopping', flush=True)\n"
        "    time.sleep(600)  # the work in hand hangs\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "stopping"
        proc.send_signal(signal.SIGSTOP)
        time.sleep(8)  # stopped for longer than the grace
        proc.send_signal(signal.SIGCONT)
        time.sleep(1)
        assert proc.poll() is None, proc.stderr.read()  # still waiting out the grace's running time
        assert proc.wait(timeout=60) == 130
        assert "did not end within 5 s of the stop" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
