"""Nutch's hung-thread guard: a fetch whose requests in flight have none begun or ended for
mapreduce.task.timeout / fetcher.threads.timeout.divisor ends without the threads that hold them."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nutch2.config import Configuration
from nutch2.fetch.fetcher import Fetcher
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.queues import FetchItem
from nutch2.mapred import timebox
from nutch2.mapred.frameworks import framework, make_runner
from nutch2.mapred.job import Counters
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.conftest import CONF_DIR, REPO, make_conf
from tests.crawlutil import conf_for, defines, rows, seed_file
from tests.helpers import TaskPlace, nutch2
from tests.testweb import TestWeb


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(hosts=2, pages_per_host=4, traps=False) as w:
        yield w


def _conf(**props: object) -> Configuration:
    base: dict[str, object] = {"http.agent.name": "nutch2-test", "fetcher.address.allow": "127.0.1.0/24",
                               "fetcher.server.delay": 0, "fetcher.server.min.delay": 0,
                               "mapreduce.task.timeout": 2000, "fetcher.threads.timeout.divisor": 1}
    return Configuration(CONF_DIR, {k: str(v) for k, v in {**base, **props}.items()})


def _fetch(conf: Configuration, urls: list[str], hang_on: str | None, release: threading.Event,
           threads: int = 3, slow_output: float = 0.0) -> tuple[dict[str, int], dict[str, Any], Fetcher]:
    """One fetch task of `urls` whose request of `hang_on` blocks until `release` (a hang no socket timeout or
    watchdog can end), each outcome recorded in `slow_output` seconds; what it output per URL and its counters."""
    outputs: dict[str, Any] = {}

    def output(item: FetchItem, code: int, args: list[str], out: ProtocolOutput | None) -> None:
        time.sleep(slow_output)
        outputs[item.url] = code

    counters = Counters("fetch")
    fetcher = Fetcher(conf, threads, output, counters, progress=False)
    make_session = fetcher.protocol.session

    def session() -> Any:
        s = make_session()
        real = s.fetch

        def fetch(url: str, **kw: Any) -> Any:
            if url == hang_on:
                release.wait()
            return real(url, **kw)

        s.fetch = fetch
        return s

    fetcher.protocol.session = session  # type: ignore[method-assign]
    try:
        fetcher.run(FetchItem(reverse_url(u), u, {}, 0, None, None) for u in urls)
    finally:
        fetcher.close()
    return counters.as_dict(), outputs, fetcher


@pytest.mark.timeout(120)
def test_a_fetch_ends_without_a_hung_thread_and_drops_its_late_outcome(
        web: TestWeb, caplog: pytest.LogCaptureFixture) -> None:
    urls = [web.page_url(h, i) for h in range(2) for i in range(4)]
    stuck = urls[5]
    release = threading.Event()
    try:
        with caplog.at_level(logging.WARNING, logger="nutch2.fetch.fetcher"):
            c, outputs, fetcher = _fetch(_conf(), urls, stuck, release)
        assert c.get("hung_threads") == 1, c
        # the other host's URLs have their outcomes; the hung one none, and those waiting behind it in its host's
        # queue (one request at a time) are dropped for a later round
        assert set(urls[:4]) <= set(outputs) and stuck not in outputs, outputs
        assert len(outputs) + 1 + c.get("hit_by_hung_threads", 0) == len(urls), c
        (hung,) = fetcher._hung
        assert hung.is_alive() and hung.name in timebox.stuck()  # a worker process would be replaced after it
        line = next(r.getMessage() for r in caplog.records if "hung threads" in r.getMessage())
        assert "aborting with 1 hung threads" in line and stuck in line and "fetch -resume" in line
    finally:
        release.set()
    hung.join(30)
    assert not hung.is_alive()
    assert stuck not in outputs  # its outcome came after the fetch had ended: dropped, the row keeps its claim
    assert hung.name not in timebox.stuck()


@pytest.mark.timeout(120)
def test_a_slow_fetch_that_goes_on_is_not_hung(web: TestWeb) -> None:
    """Requests that each take longer than half the guard's time, one after another: no thread is hung."""
    urls = [web.page_url(0, i) for i in range(4)]
    web.page_delay = 1.2
    try:
        c, outputs, _ = _fetch(_conf(**{"mapreduce.task.timeout": 2000}), urls, None, threading.Event(), threads=1)
    finally:
        web.page_delay = 0.0
    assert "hung_threads" not in c and set(outputs) == set(urls), c


@pytest.mark.timeout(120)
def test_a_thread_recording_an_outcome_for_long_is_busy_not_hung(web: TestWeb) -> None:
    """An outcome that takes longer than the guard's time to record (a sitemap's 50,000 URLs into a slow store, a
    parse): its thread is waited for, never left."""
    urls = [web.page_url(0, i) for i in range(2)]
    c, outputs, _ = _fetch(_conf(), urls, None, threading.Event(), threads=1, slow_output=3.0)
    assert "hung_threads" not in c and set(outputs) == set(urls), c


def test_the_guard_is_off_at_zero() -> None:
    fetcher = Fetcher(_conf(**{"mapreduce.task.timeout": 0}), 1, lambda *a: None, Counters("fetch"), progress=False)
    try:
        assert fetcher.hung_after == 0
    finally:
        fetcher.close()
    default = Fetcher(Configuration(CONF_DIR, {"http.agent.name": "x"}), 1, lambda *a: None, Counters("fetch"),
                      progress=False)
    try:
        assert default.hung_after == 300.0  # Nutch's: 10 minutes / 2
    finally:
        default.close()


HANGING_PROTOCOL = '''
import os
import time

from nutch2.plugins.protocol_http.plugin import Http


class Hanging(Http):
    """protocol-http, but a request of a URL ending in HANG_SUFFIX waits for the file HANG_RELEASE: a hang outside
    any socket, which no timeout of the request can end."""

    priority = 20  # chosen over protocol-http (0) and protocol-chromium (10)

    def session(self):
        s = super().session()
        real = s.fetch

        def fetch(url, **kw):
            while url.endswith(os.environ["HANG_SUFFIX"]) and not os.path.exists(os.environ["HANG_RELEASE"]):
                time.sleep(0.1)
            return real(url, **kw)

        s.fetch = fetch
        return s
'''


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fetch_with_a_hung_thread_ends_and_resume_fetches_what_it_left(tmp_path: Path) -> None:
    """Through the CLI, on the machine's default runner: the fetch ends with its hung threads (exit 0, said and
    counted; on the processes runner the worker whose task left one is replaced), and `fetch -resume` once the hang
    is gone requests exactly the URLs it left."""
    (tmp_path / "hangproto.py").write_text(HANGING_PROTOCOL)
    release = tmp_path / "release"
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]), "HANG_SUFFIX": "/p/2.html",
           "HANG_RELEASE": str(release)}
    d = defines(tmp_path, "sqlite", **{"plugin.classes": "hangproto:Hanging", "mapreduce.task.timeout": 4000,
                                       "fetcher.threads.timeout.divisor": 1})
    crawl_id = f"hung{uuid.uuid4().hex[:8]}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return nutch2(*args, "-crawlId", crawl_id, *d, env=env, timeout=240)

    with TestWeb(hosts=4, pages_per_host=3, traps=False) as web:  # by host, 127.0.1.4 is in another task
        urls = [web.page_url(h, i) for h in range(4) for i in range(3)]
        assert run("inject", seed_file(tmp_path, *urls)).returncode == 0
        batch = run("generate").stdout.strip()
        p = run("fetch", batch)
        assert p.returncode == 0, p.stderr
        # each host's /p/2.html hangs the thread that took it (the host's URLs queued behind it are dropped: the
        # fetch's random-key order may put it first in every host's queue, and then nothing else is requested)
        assert "hung threads: no request began or ended for 4 s" in p.stderr, p.stderr
        assert "hung_threads=4" in p.stderr and "Traceback" not in p.stderr, p.stderr
        if framework(conf_for(tmp_path, "sqlite")) == "processes":  # task 1 ran in a worker: it was replaced
            log = "".join(f.read_text() for f in (tmp_path / "crawl").rglob("hadoop.log"))
            assert "its task left FetcherThread-" in log, log[-3000:]
        hung = [u for u in urls if u.endswith("/p/2.html")]
        first = {u: web.count(u) for u in urls}
        assert all(first[u] == 0 for u in hung) and max(first.values()) <= 1, first
        release.touch()
        p = run("fetch", batch, "-resume")
        assert p.returncode == 0 and "hung" not in p.stderr, p.stderr
        again = {u: web.count(u) - first[u] for u in urls}
    done = rows(conf_for(tmp_path, "sqlite"), crawl_id)
    assert all(done[reverse_url(u)].status == CrawlStatus.FETCHED for u in urls), done
    # -resume requests exactly what the first fetch left, once each
    assert again == {u: 1 - first[u] for u in urls}, (first, again)


def _task_pids(conf: Configuration, store) -> list[int]:
    job = TaskPlace(conf)
    make_runner(conf, 2).run(job, store)
    return [pid for pid, _ in job.places]


def test_after_a_hung_thread_in_the_driver_its_jobs_run_every_task_in_a_worker(tmp_path: Path, caplog) -> None:
    """A hung thread left in the driver (which, unlike a worker, cannot be replaced) must not be joined by more in a
    long crawl: the next jobs run task 0 in a worker too, until the thread ends."""
    conf = make_conf(tmp_path, "sqlite", **{"mapreduce.framework.name": "processes"})
    with open_store(conf, "pids") as store:
        pids = _task_pids(conf, store)
        assert pids[0] == os.getpid() and pids[1] != os.getpid()  # the default: task 0 in the driver
        release = threading.Event()
        hung = threading.Thread(target=release.wait, name="FetcherThread-hung", daemon=True)
        hung.start()
        timebox.leave(hung)
        try:
            with caplog.at_level(logging.WARNING, logger="nutch2.mapred.processes"):
                for _ in range(2):
                    pids = _task_pids(conf, store)
                    assert len(pids) == 2 and os.getpid() not in pids
            warned = [r.getMessage() for r in caplog.records if r.name == "nutch2.mapred.processes"]
            assert len(warned) == 1 and "left FetcherThread-hung running" in warned[0], warned  # named once
        finally:
            release.set()
            hung.join(10)
        assert _task_pids(conf, store)[0] == os.getpid()  # the thread has ended: task 0 is the driver's again
        release = threading.Event()
        again = threading.Thread(target=release.wait, name="FetcherThread-hung", daemon=True)
        again.start()
        timebox.leave(again)  # a later hang, in a thread of the same name: named again
        caplog.clear()
        try:
            with caplog.at_level(logging.WARNING, logger="nutch2.mapred.processes"):
                assert os.getpid() not in _task_pids(conf, store)
            assert any("left FetcherThread-hung running" in r.getMessage() for r in caplog.records)
        finally:
            release.set()
            again.join(10)
