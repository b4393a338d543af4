"""Stopping like a trusted batch system: SIGINT or SIGTERM during fetch, parse, updatedb and crawl (on sqlite,
the processes runner and every service store) ends the command within http.timeout + 5 s with exit 130, one
"stopping" line and the command that resumes; that command then finishes the work to exactly the rows of an
uninterrupted run, requesting no page twice. A second signal exits at once, and the rerun is still exact."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import STORE_BACKENDS
from tests.crawlutil import conf_for, defines, seed_file
from tests.test_crash_safety import build_batch, nutch2, same_rows, table
from tests.test_parse_job import page_html
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
HTTP_TIMEOUT_MS = 5000  # what tests.crawlutil.defines sets
INT, TERM = signal.SIGINT, signal.SIGTERM
SERVICES = [b for b in STORE_BACKENDS if b not in ("memory", "sqlite")]


def _cases(*local: tuple[str, int]) -> list[tuple[str, int]]:
    """The given local cases, then each service store with alternating signals."""
    return [*local, *((b, (TERM, INT)[i % 2]) for i, b in enumerate(SERVICES))]


def stop_when(args: list[object], ready: Callable[[], bool], sig: int, twice: bool = False,
              ) -> subprocess.CompletedProcess[str]:
    """Start `nutch2 args`, send `sig` once `ready()` holds, and wait at most http.timeout + 5 s for the end."""
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", *map(str, args)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and not ready():
        assert time.monotonic() < deadline, "the work never got under way"
        time.sleep(0.02)
    assert proc.poll() is None, "the command ended before it could be stopped: give it more work"
    os.kill(proc.pid, sig)
    if twice:
        time.sleep(0.3)
        os.kill(proc.pid, sig)
    try:
        out, err = proc.communicate(timeout=HTTP_TIMEOUT_MS / 1000 + 5)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running {HTTP_TIMEOUT_MS / 1000 + 5:.0f} s after the signal:\n{err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def resume(stopped: subprocess.CompletedProcess[str], job: str) -> list[str]:
    """Check the stop's lines; the arguments of the command it names to go on."""
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert re.search(rf"^nutch2 {job}: stopping: finishing .*; (Ctrl-C|a signal) again to quit now$", stopped.stderr,
                     re.M), stopped.stderr
    m = re.search(rf"^nutch2 {job}: stopped; what was done is kept: run `(nutch2 .*)` to go on$", stopped.stderr,
                  re.M)
    assert m, stopped.stderr
    return shlex.split(m.group(1))[1:]


def page_requests(web: TestWeb) -> Counter[tuple[str, str]]:
    return Counter((r.host, r.path) for r in web.requests() if r.path != "/robots.txt")


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=30, traps=False) as w:
        yield w


# ---------------------------------------------------------------------------------------------------- fetch
def _generated(tmp: Path, backend: str, web: TestWeb, crawl_id: str, d: list[str]) -> None:
    seeds = seed_file(tmp, *[web.page_url(h, i) for h in range(3) for i in range(30)])
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    assert nutch2("generate", "-batchId", "B", "-crawlId", crawl_id, *d).stdout.strip() == "B"


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "sig"), _cases(("sqlite", INT), ("sqlite", TERM), ("sqlite:processes", INT)))
def test_a_signal_stops_fetch_and_the_resume_command_finishes_it_exactly(web: TestWeb, tmp_path: Path,
                                                                         backend: str, sig: int) -> None:
    props = {"fetcher.server.delay": 0.3, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    ref, crawl_id = f"fr{uuid.uuid4().hex[:8]}", f"fs{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        _generated(tmp_path, backend, web, cid, d)
    assert nutch2("fetch", "B", "-crawlId", ref, *d).returncode == 0
    web.reset_log()
    args = ["fetch", "B", "-crawlId", crawl_id, *d]
    stopped = stop_when(args, lambda: sum(page_requests(web).values()) >= 12, sig)
    again = resume(stopped, "fetch")
    assert "-resume" in again
    done = sum(1 for p in table(conf, crawl_id).values() if Mark.FETCH.check(p))
    assert 12 <= done < 90  # what was fetched was written; the rest was left for -resume
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    assert max(page_requests(web).values()) == 1  # no page requested twice
    same_rows(table(conf, crawl_id), table(conf, ref))


def test_a_second_signal_exits_at_once_and_the_rerun_is_still_exact(web: TestWeb, tmp_path: Path) -> None:
    props = {"fetcher.server.delay": 0.3, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    for cid in ("ref", "twice"):
        _generated(tmp_path, "sqlite", web, cid, d)
    assert nutch2("fetch", "B", "-crawlId", "ref", *d).returncode == 0
    web.reset_log()
    stopped = stop_when(["fetch", "B", "-crawlId", "twice", *d], lambda: sum(page_requests(web).values()) >= 6, INT,
                        twice=True)
    assert stopped.returncode == 130 and "stopped at once" in stopped.stderr, stopped.stderr
    assert nutch2("fetch", "B", "-resume", "-crawlId", "twice", *d).returncode == 0
    assert max(page_requests(web).values()) == 1  # nothing requested twice
    # exiting at once is a kill: a request in flight then had no answer, and is recorded so (a lost fetch, one
    # retry), never sent again; every other row is the uninterrupted run's
    got, want = table(conf, "twice"), table(conf, "ref")
    lost = {k for k, p in got.items() if any("lost" in a for a in p.protocol_status.args)}
    assert len(lost) <= 10  # fetcher.threads.fetch: at most the requests in flight
    same_rows({k: p for k, p in got.items() if k not in lost}, {k: p for k, p in want.items() if k not in lost})


# ---------------------------------------------------------------------------------------------------- parse
def _fetched(conf, crawl_id: str, n: int) -> None:
    """A fetched, unparsed batch B of n pages (about 20 KB each)."""
    with open_store(conf, crawl_id) as store:
        for i in range(n):
            url = f"http://p{i % 9}.test/{i}.html"
            links = [(f"http://p{(i + j) % 9}.test/{(i * 7 + j) % n}.html", f"to {j}") for j in range(8)]
            body = page_html(f"Page {i}", " ".join(f"word{(i * j) % 997}" for j in range(2500)), links)
            page = WebPage(reverse_url(url), status=2, content=body, content_type="text/html",
                           base_url=url, fetch_time=1, markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"},
                           batch_id="B")
            store.put(page.key, page)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "sig"), _cases(("sqlite", TERM), ("sqlite:processes", INT)))
def test_a_signal_stops_parse_and_the_resume_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                         sig: int) -> None:
    props = {"storage.write.batch.size": 20, "storage.hbase.batch.size": 20}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    n = 1500 if backend.startswith("sqlite") else 800
    ref, crawl_id = f"pr{uuid.uuid4().hex[:8]}", f"ps{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        _fetched(conf, cid, n)
    assert nutch2("parse", "B", "-crawlId", ref, *d).returncode == 0

    def parsed() -> int:
        with open_store(conf, crawl_id, create=False) as store:
            return store.count(mark=(Mark.PARSE.value, "B"))

    stopped = stop_when(["parse", "B", "-crawlId", crawl_id, *d], lambda: parsed() >= 40, sig)
    again = resume(stopped, "parse")
    assert "-resume" in again and 40 <= parsed() < n
    assert nutch2(*again).returncode == 0
    same_rows(table(conf, crawl_id), table(conf, ref))


# ---------------------------------------------------------------------------------------------------- updatedb
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "sig"), _cases(("sqlite", INT), ("sqlite:processes", TERM)))
def test_a_signal_stops_updatedb_and_the_same_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                          sig: int) -> None:
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

    stopped = stop_when(["updatedb", "B", "-crawlId", crawl_id, *d], grown, sig)
    again = resume(stopped, "updatedb")
    assert nutch2(*again).returncode == 0
    same_rows(table(conf, crawl_id), table(conf, ref))


# ---------------------------------------------------------------------------------------------------- crawl
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("backend", "sig"), _cases(("sqlite", TERM), ("sqlite:processes", INT)))
def test_a_signal_stops_crawl_and_the_same_command_finishes_it_exactly(tmp_path: Path, backend: str,
                                                                       sig: int) -> None:
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
        stopped = stop_when([*args, "-crawlId", crawl_id, *d], lambda: sum(page_requests(web).values()) >= 10, sig)
        again = resume(stopped, "crawl")
        assert again == [str(a) for a in [*args, "-crawlId", crawl_id, *d]]  # the same command
        rerun = nutch2(*again)
        assert rerun.returncode == 0, rerun.stderr
        assert max(page_requests(web).values()) == 1
        same_rows(table(conf, crawl_id), expected, _round_names(conf, crawl_id), ref_names)


def _round_names(conf, crawl_id: str) -> dict[str, str]:
    from nutch2.crawldb.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


# ---------------------------------------------------------------------------------------------------- spark
@pytest.mark.timeout(400)
def test_a_signal_stops_a_fetch_on_spark_and_resume_requests_nothing_twice(web: TestWeb, tmp_path: Path) -> None:
    """On Spark a stop cancels the job's tasks (in the executors, as a kill would end them): the command still
    ends within the bound with 130 and the resume command; what was claimed but not answered is a lost fetch
    (tests/test_spark.py), never a second request."""
    pytest.importorskip("pyspark")
    props = {"fetcher.server.delay": 0.3, "mapreduce.framework.name": "spark", "spark.master": "local[2]",
             "spark.ui.enabled": "false", "fetcher.threads.fetch": 4}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    _generated(tmp_path, "sqlite", web, "sp", d)
    web.reset_log()
    stopped = stop_when(["fetch", "B", "-crawlId", "sp", *d], lambda: sum(page_requests(web).values()) >= 10, INT)
    again = resume(stopped, "fetch")
    rerun = nutch2(*again)
    assert rerun.returncode == 0, rerun.stderr
    assert max(page_requests(web).values()) == 1
    rows = table(conf, "sp")
    assert all(Mark.FETCH.check(p) == "B" for p in rows.values())  # every URL has its outcome
    lost = [p for p in rows.values() if any("lost" in a for a in p.protocol_status.args)]
    assert len(lost) <= 2 * 4  # at most the requests in flight (threads of the two tasks)
