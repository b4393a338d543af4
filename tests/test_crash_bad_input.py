"""Rows of the hostile-user table (issue: crash-safe jobs) that are not kills: a full disk mid-updatedb, a round
with nothing fetched, a bad seed line among good ones, two fetches of one batch at once, names that would leave
the data dir, and spill files of killed jobs. Each through the real CLI in subprocesses."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from nutch2.crawldb.journal import Journal
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from tests import helpers
from tests.crawlutil import conf_for, defines
from tests.helpers import build_batch, same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
nutch2 = partial(helpers.nutch2, timeout=120)  # tests/helpers.py, with a shorter time limit


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    lines = [x for x in p.stderr.splitlines() if "error" in x]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_full_disk_mid_updatedb_then_rerun_is_exact(tmp_path: Path) -> None:
    """The sqlite file may not grow past a size limit (RLIMIT_FSIZE: writes fail with EFBIG, as on a full disk)."""
    props = {"storage.write.batch.size": 40}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    build_batch(conf, "ref")
    assert nutch2("updatedb", "B", "-crawlId", "ref", *d).returncode == 0
    build_batch(conf, "full")
    db = tmp_path / "crawl" / "full_webpage.sqlite"
    wal = db.with_name(db.name + "-wal")
    limit = max(db.stat().st_size, wal.stat().st_size if wal.exists() else 0) + 200_000

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    full = nutch2("updatedb", "B", "-crawlId", "full", *d, preexec_fn=small_disk)
    assert full.returncode == 1
    assert "write failed" in one_line(full) or "full" in one_line(full)
    assert "free space on its disk (or move storage.data.dir), then run the same command" in one_line(full)
    rerun = nutch2("updatedb", "B", "-crawlId", "full", *d)
    assert rerun.returncode == 0, rerun.stderr
    same_rows(table(conf, "full"), table(conf, "ref"))


def test_round_with_nothing_fetched_is_a_normal_no_op(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    with TestWeb(hosts=3, pages_per_host=2) as web:
        deferred = web.url(web.robots_503_host, "/")  # robots.txt answers 503: the host is deferred
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(deferred + "\n")
        crawl = nutch2("crawl", seeds, "-rounds", 2, "-crawlId", "nf", *d)
        assert crawl.returncode == 0, crawl.stderr
        assert "nothing to do" in crawl.stderr and "fetched_rows=0" in crawl.stderr
        assert {r.path for r in web.requests(host=web.hosts[web.robots_503_host])} == {"/robots.txt"}
        rows = table(conf, "nf")
        assert [p.status for p in rows.values()] == [CrawlStatus.INJECTED]  # due again in a later round
        assert not any(p.markers.get(Mark.GENERATE.value) for p in rows.values())
        with open_store(conf, "nf", create=False) as store:
            batches = Journal(store).batches()
        # one round: the deferred URL is due again only after http.robots.503.defer.visits.delay, so the second
        # round finds nothing due and the crawl ends (it does not ask that robots.txt round after round)
        assert len(batches) == 1 and {b.state for b in batches} == {"updated"}
        assert "nothing left to fetch" in crawl.stderr or "nothing is due" in crawl.stderr, crawl.stderr
        # each step of such a batch on its own: exit 0, and a counter says there was nothing
        batch = batches[0].batch_id
        for step, counter in (("fetch", "generated_rows=0"), ("parse", "fetched_rows=0"),
                              ("updatedb", "generated_rows=0")):
            p = nutch2(step, batch, "-crawlId", "nf", *d)
            assert p.returncode == 0, (step, p.stderr)
            assert "nothing to do" in p.stderr and counter in p.stderr, step
        assert nutch2("parse", "1-2", "-crawlId", "nf", *d).returncode == 1  # an unknown batch is still an error


def test_bad_seed_line_is_skipped_and_the_good_ones_are_written(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nhttp://b.test/\tnutch.fetchInterval=99999999999999999999999\n"
                     "http://c.test/\tnutch.score=1e999\nhttp://d.test/\tnutch.fetchInterval=86400\n")
    p = nutch2("inject", seeds, "-crawlId", "bs", *d)
    assert p.returncode == 0, p.stderr
    assert f"{seeds}:2: nutch.fetchInterval must be at most 2147483647" in p.stderr
    assert f"{seeds}:3: nutch.score is not a finite number" in p.stderr
    assert " injected=2 " in p.stderr and " rejected=2" in p.stderr
    keys = set(table(conf_for(tmp_path, "sqlite"), "bs"))
    assert keys == {"test.a:http/", "test.d:http/"}


def test_a_store_write_error_leaves_no_transaction_open(tmp_path: Path) -> None:
    """A value sqlite cannot hold fails that batch with one line; the next write on the connection works."""
    conf = conf_for(tmp_path, "sqlite")
    from nutch2.errors import StoreError
    from nutch2.webpage import WebPage

    with open_store(conf, "tx") as store:
        store.put("test.a:http/", WebPage("test.a:http/", fetch_interval=10**30))
        with pytest.raises(StoreError, match="write failed"):
            store.flush()
        store.discard_pending()
        store.put("test.b:http/", WebPage("test.b:http/", status=1))
        store.flush()
        assert store.get("test.b:http/") is not None


@pytest.mark.timeout(120)
def test_two_fetches_of_one_batch_at_once(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.3})
    with TestWeb(hosts=2, pages_per_host=8, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(web.page_url(h, i) + "\n" for h in range(2) for i in range(8)))
        assert nutch2("inject", seeds, "-crawlId", "tf", *d).returncode == 0
        batch = nutch2("generate", "-crawlId", "tf", *d).stdout.strip()
        first = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, "-crawlId", "tf", *d],
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not web.requests() and first.poll() is None:
            time.sleep(0.05)
        second = nutch2("fetch", batch, "-crawlId", "tf", *d)
        every = nutch2("fetch", "-all", "-crawlId", "tf", *d)
        assert first.wait(60) == 0, first.stderr.read() if first.stderr else ""
        for p in (second, every):
            assert p.returncode == 1
            assert "is running and holds its lease" in one_line(p) and f"pid {first.pid}" in one_line(p)
        fetched = [f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt"]
        assert len(fetched) == len(set(fetched)) == 16  # every URL fetched once
        # the lock is gone with the process: the same batch can be fetched again
        assert nutch2("fetch", batch, "-resume", "-crawlId", "tf", *d).returncode == 0


@pytest.mark.parametrize("args, what", [
    (["-crawlId", "abc\n"], "crawl id 'abc\\n' is not valid"),
    (["-crawlId", "../x"], "crawl id '../x' is not valid"),
    (["-crawlId", "ok", "-D", "storage.schema.webpage=../../x"], "storage.schema.webpage='../../x' is not valid"),
])
def test_names_that_would_leave_the_data_dir(tmp_path: Path, args: list[str], what: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    work = tmp_path / "work"
    work.mkdir()
    p = nutch2("inject", seeds, *args, "-D", "storage.data.dir=crawl", "-D", "http.agent.name=t", cwd=work)
    assert p.returncode == 1
    assert what in one_line(p).replace(" a valid table name", " valid")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["seeds.txt", "work"]
    assert list(work.rglob("*")) == []


def test_data_dir_that_is_a_file_dump_to_a_file_and_a_damaged_db(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    p = nutch2("inject", seeds, "-crawlId", "x", "-D", f"storage.data.dir={afile}")
    assert p.returncode == 1 and "is a file, not a folder" in one_line(p)
    d = ["-D", f"storage.data.dir={tmp_path / 'crawl'}"]
    assert nutch2("inject", seeds, "-crawlId", "x", *d).returncode == 0
    p = nutch2("readdb", "-dump", afile, "-crawlId", "x", *d)
    assert p.returncode == 1 and "it is a file" in one_line(p)
    assert afile.read_text() == "x"
    damaged = tmp_path / "crawl" / "y_webpage.sqlite"
    damaged.write_bytes(b"not a database" + os.urandom(4096))
    for cmd in (["readdb", "-stats"], ["inject", seeds], ["generate"]):
        p = nutch2(*cmd, "-crawlId", "y", *d)
        assert p.returncode == 1 and "is damaged" in one_line(p), cmd


def test_spill_files_of_killed_jobs_are_removed(tmp_path: Path) -> None:
    """A job that spills removes the spill folders of jobs whose process is gone (kill -9 leaves them)."""
    spill = tmp_path / "spill"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = spill / f"nutch2-shuffle-{dead.pid}-abc"
    stale.mkdir(parents=True)
    (stale / "spill-0-1.pkl").write_bytes(b"x" * 1000)
    alive = spill / f"nutch2-shuffle-{os.getpid()}-def"
    alive.mkdir()
    props = {"mapreduce.task.io.sort.mb": 0.0001, "mapreduce.cluster.local.dir": spill}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    build_batch(conf, "sp")
    p = nutch2("updatedb", "B", "-crawlId", "sp", *d)
    assert p.returncode == 0 and "spilled_records" in p.stderr, p.stderr
    assert not stale.exists() and alive.exists()
    assert [x.name for x in spill.iterdir()] == [alive.name]

