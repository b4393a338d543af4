"""kill -9 in `nutch2 sitemap`, `nutch2 warc` and `nutch2 warcimport` (nutch2/failpoints.py), then the same command
again: the rows (or files) of an uninterrupted run. Through the real CLI in subprocesses, on sqlite with both
runners and on every service store in NUTCH2_TEST_STORES."""

from __future__ import annotations

import re
import subprocess
import uuid
from functools import partial
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from nutch2.crawldb.journal import FETCHED, IMPORTING, Journal
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests import helpers
from tests.conftest import STORE_BACKENDS, runner_of
from tests.crawlutil import conf_for, defines
from tests.helpers import KILLED
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
BACKENDS = [*[b for b in STORE_BACKENDS if b != "memory"], "sqlite:local"]
nutch2 = partial(helpers.nutch2, timeout=300)  # tests/helpers.py, with a longer time limit


def killed(proc: subprocess.CompletedProcess[str], backend: str, in_task: bool) -> bool:
    """Killed where the point is: this process, or (processes runner, a point in a task) the process that ran the
    task: the command itself (it runs task 0) or a worker, which the command reports in one line."""
    if runner_of(backend) == "processes" and in_task and proc.returncode == 1:
        return "a worker process died" in proc.stderr
    return proc.returncode == KILLED


def table(conf, crawl_id: str, drop: tuple[str, ...] = ()) -> dict[str, dict]:
    with open_store(conf, crawl_id, create=False) as store:
        return {p.key: _values(p, drop) for p in store.scan()}


def _values(page: WebPage, drop: tuple[str, ...]) -> dict:
    return {name: getattr(page, name) for name in sorted(page.loaded()) if name not in drop}


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------------------------------------- sitemap
@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sitemap_kill_9_then_rerun_is_exact(tmp_path: Path, backend: str) -> None:
    props = {"storage.write.batch.size": 40, "storage.hbase.batch.size": 40, "fetcher.server.delay": 0.02,
             "sitemap.size.max": 1_000_000}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    with TestWeb(hosts=3, pages_per_host=2, traps=False, sitemaps=True) as web:
        listed = tmp_path / "sitemaps.txt"  # the sitemap host's index and 1000 URLs of the 100 MB sitemap
        listed.write_text(f"{web.url(web.sitemap_host, '/sitemap_index.xml')}\n{web.hostile_sitemap_urls()['huge']}\n")
        ref = new_id("sr")
        assert nutch2("sitemap", "-sitemapUrls", listed, "-crawlId", ref, *d).returncode == 0
        expected = table(conf, ref, drop=("fetch_time",))  # a new row is due from the time of its job
        assert len(expected) == 1000 + len(web.sitemap_entries)
        for point in ("store.flush=2", "store.flush=8"):  # per process: the workers count their own
            crawl_id = new_id("sk")
            proc = nutch2("sitemap", "-sitemapUrls", listed, "-crawlId", crawl_id, *d, failpoints=point)
            assert killed(proc, backend, in_task=True), (point, proc.returncode, proc.stderr[-500:])
            assert 0 < len(table(conf, crawl_id)) < len(expected), point
            rerun = nutch2("sitemap", "-sitemapUrls", listed, "-crawlId", crawl_id, *d)
            assert rerun.returncode == 0, (point, rerun.stderr)
            assert table(conf, crawl_id, drop=("fetch_time",)) == expected, point


# ---------------------------------------------------------------------------------------------------- WARC
@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """A 4-round crawl of the test web per backend: (tmp folder, crawl id)."""
    out = {}
    with TestWeb(hosts=3, pages_per_host=12, traps=False) as web:
        for backend in BACKENDS:
            tmp = tmp_path_factory.mktemp("crawl")
            (tmp / "seeds.txt").write_text(web.seed_url + "\n")
            crawl_id = new_id("wc")
            proc = nutch2("crawl", tmp / "seeds.txt", "-rounds", 4, "-crawlId", crawl_id, *defines(tmp, backend))
            assert proc.returncode == 0, proc.stderr
            out[backend] = (tmp, crawl_id)
    return out


def responses(folder: Path) -> set[tuple[str, str, str]]:
    """(URI, payload digest, date) of every response in the folder's complete files, each read to its end with
    its digests checked (a half file under a final name fails here)."""
    got = set()
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, check_digests="raise"):
                rec.content_stream().read()
                if rec.rec_type == "response":
                    h = rec.rec_headers
                    got.add((h.get_header("WARC-Target-URI"), h.get_header("WARC-Payload-Digest"),
                             h.get_header("WARC-Date")))
    return got


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", BACKENDS)
def test_warc_kill_9_leaves_no_half_file_and_a_rerun_replaces_it(crawled: dict, backend: str) -> None:
    tmp, crawl_id = crawled[backend]
    d = defines(tmp, backend)
    ref = tmp / f"ref-{uuid.uuid4().hex[:6]}"
    assert nutch2("warc", ref, "-all", "-crawlId", crawl_id, "-maxSize", 0.01, *d).returncode == 0
    expected = responses(ref)
    assert len(expected) > 20
    for point in ("warc.record=3", "warc.record=12"):
        out = tmp / f"out-{uuid.uuid4().hex[:6]}"
        proc = nutch2("warc", out, "-all", "-crawlId", crawl_id, "-maxSize", 0.01, *d, failpoints=point)
        assert killed(proc, backend, in_task=True), (point, proc.returncode, proc.stderr[-500:])
        partial = responses(out)  # the complete files are whole ...
        assert partial < expected, point
        assert list(out.glob("*.open")), point  # ... and the file being written is not under a final name
        rerun = nutch2("warc", out, "-all", "-crawlId", crawl_id, "-maxSize", 0.01, *d)
        assert rerun.returncode == 0, (point, rerun.stderr)
        assert responses(out) == expected and not list(out.glob("*.open")), point
        assert re.search(r"removed \d+ files? of an earlier run", rerun.stderr), rerun.stderr


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", BACKENDS)
def test_warcimport_kill_9_then_rerun_continues_the_same_batch(crawled: dict, backend: str) -> None:
    tmp, crawl_id = crawled[backend]
    props = {"warc.import.chunk.mb": 0.01, "storage.write.batch.size": 5, "storage.hbase.batch.size": 5}
    d = defines(tmp, backend, **props)
    conf = conf_for(tmp, backend, **props)
    files_dir = tmp / "import"
    if not files_dir.exists():
        assert nutch2("warc", files_dir, "-all", "-crawlId", crawl_id, "-maxSize", 0.01, *d).returncode == 0
    files = sorted(files_dir.glob("*.warc.gz"))
    ref = new_id("ir")
    done = nutch2("warcimport", *files, "-crawlId", ref, *d)
    assert done.returncode == 0, done.stderr
    batch = done.stdout.strip()
    expected = table(conf, ref)
    assert len(expected) > 20
    # runner.job: the driver, after a chunk's job; store.flush and warcimport.row: in a task, mid-chunk
    for point, in_task in (("runner.job=2", False), ("store.flush=3", True), ("warcimport.row=9", True)):
        crawl_id_k = new_id("ik")
        proc = nutch2("warcimport", *files, "-crawlId", crawl_id_k, *d, failpoints=point)
        assert killed(proc, backend, in_task), (point, proc.returncode, proc.stderr[-500:])
        assert proc.stdout == ""  # the batch id is printed only once the batch is whole
        with open_store(conf, crawl_id_k, create=False) as store:
            assert Journal(store).batch(batch).state == IMPORTING, point
        assert 0 < len(table(conf, crawl_id_k)) < len(expected), point
        parse = nutch2("parse", batch, "-crawlId", crawl_id_k, *d)  # a half-imported batch is left alone
        assert parse.returncode == 1 and "run that same warcimport command again" in parse.stderr, point
        rerun = nutch2("warcimport", *files, "-crawlId", crawl_id_k, *d)
        assert rerun.returncode == 0 and rerun.stdout.strip() == batch, (point, rerun.stderr)
        assert "continuing the interrupted import" in rerun.stderr and "already_imported=" in rerun.stderr
        assert table(conf, crawl_id_k) == expected, point
        with open_store(conf, crawl_id_k, create=False) as store:
            assert Journal(store).batch(batch).state == FETCHED, point
