"""Resume: kill -9 a fetch of >= 500 URLs midway, then `fetch <batch> -resume` finishes it without losing a URL
and without requesting any URL twice: a URL claimed by the killed run but not written (its request was in flight,
or its outcome not yet flushed: at most two per fetcher thread) is recorded as a failed fetch (RETRY, "fetch result
lost"), not requested again (nutch2/fetch/fetchclaim.py)."""

from __future__ import annotations

import collections
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nutch2.fetch.fetchclaim import CLAIM, LOST_REASON
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import unreverse_url
from tests.conftest import JOB_BACKENDS
from tests.crawlutil import cli, conf_for, defines, rows
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
HOSTS, PAGES, THREADS, WRITE_BATCH = 10, 60, 10, 20


@pytest.mark.timeout(180)
@pytest.mark.parametrize("backend", [b for b in JOB_BACKENDS if b != "memory"])
def test_kill_9_midway_then_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str) -> None:
    props = {"fetcher.server.delay": 0.05, "fetcher.write.batch.size": WRITE_BATCH}
    d = defines(tmp_path, backend, **props)
    crawl_id = f"res{uuid.uuid4().hex[:8]}"
    with TestWeb(hosts=HOSTS, pages_per_host=PAGES, traps=False) as web:
        urls = [web.page_url(h, i) for h in range(HOSTS) for i in range(PAGES)]
        assert len(urls) >= 500
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(u + "\n" for u in urls))
        assert cli("inject", seeds, "-crawlId", crawl_id, *d) == 0
        capsys.readouterr()
        assert cli("generate", "-crawlId", crawl_id, *d) == 0
        batch = capsys.readouterr().out.strip()

        def page_requests() -> list[str]:
            return [f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt"]

        web.reset_log()
        proc = subprocess.Popen(
            [sys.executable, "-m", "nutch2.cli", "fetch", batch, "-threads", str(THREADS), "-crawlId", crawl_id, *d],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while len(page_requests()) < len(urls) // 2:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the fetch made too little progress"
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
            if proc.stderr:
                proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        first_run = len(page_requests())
        assert first_run < len(urls), "the fetch finished before the kill"

        db_files = list((tmp_path / "crawl").rglob("*.db")) + list((tmp_path / "crawl").rglob("*.sqlite"))
        assert db_files or backend != "sqlite"
        for db in db_files:
            conn = sqlite3.connect(db)
            try:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                conn.close()

        conf = conf_for(tmp_path, backend, **props)
        marked = [p for p in rows(conf, crawl_id).values() if Mark.FETCH.check(p) == batch]
        assert 0 < len(marked) < len(urls)

        assert cli("fetch", batch, "-resume", "-threads", str(THREADS), "-crawlId", crawl_id, *d) == 0
        summary = capsys.readouterr().err
        table = rows(conf, crawl_id)
        assert len(table) == len(urls)  # no URL lost, none added
        lost = []
        for key, page in table.items():
            assert Mark.FETCH.check(page) == batch, key
            if page.status == CrawlStatus.RETRY:
                assert page.protocol_status.args == [LOST_REASON], key
                lost.append(key)
            else:
                assert page.status == CrawlStatus.FETCHED, (key, page.status)
        counts = collections.Counter(page_requests())
        lost_urls = {unreverse_url(k).split("//", 1)[1].replace(f":{web.port}", "") for k in lost}
        # a lost URL was claimed, so its request may have been sent (or the kill came just before it)
        assert set(counts) | lost_urls == {u.split("//", 1)[1].replace(f":{web.port}", "") for u in urls}
        twice = [u for u, n in counts.items() if n > 1]
        print(f"killed after {first_run} requests, {len(marked)} rows marked, {len(lost)} results lost")
        assert not twice, twice  # -resume requests nothing the killed run requested
        assert len(lost) <= 2 * THREADS, (len(lost), first_run)
        assert f"result_lost={len(lost)}" in summary if lost else "result_lost" not in summary, summary
        assert cli("parse", batch, "-crawlId", crawl_id, *d) == 0
        assert cli("updatedb", batch, "-crawlId", crawl_id, *d) == 0  # each lost result: one retry, counted once
        assert f"updated={len(urls)}" in capsys.readouterr().err
        for key in lost:
            page = rows(conf, crawl_id)[key]
            assert page.status == CrawlStatus.RETRY and page.retries_since_fetch == 1, key
            assert CLAIM not in page.metadata, key
