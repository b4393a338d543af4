"""A crawl that does not need a number of rounds: `crawl -rounds -1` ends by itself once nothing is due,
`crawl -continuous` keeps crawling as pages come due and seed files are added (SIGTERM stops it with exit 130,
STOP ends it with exit 0), and `-timeLimit` bounds a whole crawl, which the same command then finishes."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url
from tests.conftest import REPO
from tests.crawlutil import conf_for, defines, passes_filters, rows
from tests.helpers import nutch2
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow


def crawl_command(seeds: Path, crawl_id: str, d: list[str], *args: str) -> list[str]:
    return [sys.executable, "-m", "nutch2.cli", "crawl", str(seeds), "-crawlId", crawl_id, "-threads", "4", *args, *d]


def wait_for(what, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(step)
    return False


def test_rounds_minus_one_crawls_until_nothing_is_due(tmp_path: Path) -> None:
    with TestWeb(hosts=3, pages_per_host=8, traps=False) as web:
        (tmp_path / "seeds").mkdir()
        (tmp_path / "seeds" / "seeds.txt").write_text(web.seed_url + "\n")
        d = defines(tmp_path, "sqlite")
        done = nutch2("crawl", tmp_path / "seeds", "-crawlId", "untildone", "-rounds", "-1", "-threads", "4", *d,
                      timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "crawl: nothing left to fetch, stopping" in done.stderr
        conf = conf_for(tmp_path, "sqlite")
        table = rows(conf, "untildone")
        reachable = {u for u in web.crawl_model(rounds=50).all_requested() if passes_filters(conf, u)}
        assert reachable and {reverse_url(u) for u in reachable} <= set(table)
        assert {CrawlStatus(p.status).name for p in table.values()} == {"FETCHED"}
        rounds = [line for line in done.stderr.splitlines() if line.startswith("crawl: round ")]
        assert rounds[0] == "crawl: round 1 (until nothing is due)" and len(rounds) > 2


def test_a_continuous_crawl_refetches_due_pages_takes_new_seeds_and_stops(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    crawl_id = "cont" + uuid.uuid4().hex[:6]
    props = {"db.fetch.interval.default": 5, "crawl.continuous.poll.seconds": 0.5, "http.timeout": 5000,
             "crawl.continuous.gather.seconds": 0}  # rounds back to back: the crawl waits for the next row
    d = defines(tmp_path, "sqlite", **props)
    with TestWeb(hosts=2, pages_per_host=2, traps=False) as web, TestWeb(hosts=1, pages_per_host=1,
                                                                          traps=False) as other, \
            TestWeb(hosts=1, pages_per_host=1, traps=False, page_delay=60) as slow:
        (seeds / "a.txt").write_text(web.seed_url + "\n")
        seed_path = web.seed_url.split(str(web.port), 1)[1]
        proc = subprocess.Popen(crawl_command(seeds, crawl_id, d, "-continuous"), cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # the seed page comes due 5 s after its fetch and is fetched again
            refetched = wait_for(lambda: len(web.requests(host=0, path=seed_path)) >= 2, 90)
            assert refetched, "the seed page was not fetched again"
            first, second = sorted(r.arrived for r in web.requests(host=0, path=seed_path))[:2]
            assert second - first >= 4.9  # not before it was due (5 s after its fetch)
            # a seed file dropped into the folder is injected and crawled
            (seeds / "b.txt").write_text(other.seed_url + "\n")
            assert wait_for(lambda: other.requests(host=0, path="/"), 60), "the new seed was not crawled"
            # SIGTERM while a page is in flight (its server answers after 60 s): the stop's promise holds
            (seeds / "c.txt").write_text(slow.seed_url + "\n")
            assert wait_for(lambda: [p for p in slow.pending() if p[1] != "/robots.txt"], 60), "no slow request"
            stopped = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=5 + 5 + 30)
            assert proc.returncode == 130, err[-3000:]
            assert time.monotonic() - stopped < 5 + 5  # http.timeout + 5 s
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert "crawl: nothing is due; the next row comes due at " in err
        assert "crawl: the seeds changed; injecting them" in err
        # the same command goes on; a STOP file ends it with exit 0
        proc = subprocess.Popen(crawl_command(seeds, crawl_id, d, "-continuous"), cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(lambda: "nothing is due" in _log(tmp_path), 90)
            (tmp_path / "crawl" / f"{crawl_id}.STOP").write_text("")
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err[-3000:]
        assert re.search(r"crawl: an earlier crawl was interrupted in round \d+ \(continuous crawl\); finishing it",
                         err), err[-3000:]
        assert f"{crawl_id}.STOP found (and removed): the continuous crawl ends" in err
        assert not (tmp_path / "crawl" / f"{crawl_id}.STOP").exists()
        assert f"crawl: {crawl_id}: " in out


def test_a_continuous_crawl_waits_when_its_seed_folder_is_emptied_or_gone(tmp_path: Path) -> None:
    """An operator swaps seed files (moves them out, or the folder away, then back): the service keeps waiting,
    and a restart with the folder empty starts and waits for seed files, instead of exiting 1."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    crawl_id = "swap" + uuid.uuid4().hex[:6]
    props = {"crawl.continuous.poll.seconds": 0.3}
    d = defines(tmp_path, "sqlite", **props)
    with TestWeb(hosts=1, pages_per_host=2, traps=False) as web, TestWeb(hosts=1, pages_per_host=1,
                                                                          traps=False) as other:
        (seeds / "a.txt").write_text(web.seed_url + "\n")
        with _continuous(seeds, crawl_id, d) as proc:
            assert wait_for(lambda: "nothing is due" in _log(tmp_path), 90)
            (seeds / "a.txt").rename(tmp_path / "a.txt")  # emptied
            assert wait_for(lambda: "no seed file in" in _log(tmp_path), 30)
            seeds.rename(tmp_path / "away")  # gone
            time.sleep(1.0)
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            (tmp_path / "away").rename(seeds)
            (seeds / "b.txt").write_text(other.seed_url + "\n")  # back, with a new file
            assert wait_for(lambda: other.requests(host=0, path="/"), 60), "the new seed was not crawled"
            err = _sigterm(proc)
            assert proc.returncode == 130, err[-3000:]
        (seeds / "b.txt").unlink()  # restarted with an empty folder: it starts, and waits
        waits = _log(tmp_path).count("nothing is due")
        with _continuous(seeds, crawl_id, d) as proc:
            assert wait_for(lambda: proc.poll() is not None or _log(tmp_path).count("nothing is due") > waits, 90)
            assert proc.poll() is None
            err = _sigterm(proc)
        assert proc.returncode == 130 and f"crawl: no seed file in {seeds} (yet); crawling the rows there are" in err


def test_a_waiting_continuous_crawl_takes_rows_another_command_injected(tmp_path: Path) -> None:
    """A month-long continuous crawl waits for its next row (30 days off with the default interval); an operator
    runs `nutch2 inject` beside it. The crawl waited out the 30 days before fetching the new row."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    crawl_id = "inj" + uuid.uuid4().hex[:6]
    d = defines(tmp_path, "sqlite", **{"crawl.continuous.poll.seconds": 0.3})
    with TestWeb(hosts=1, pages_per_host=1, traps=False) as web, TestWeb(hosts=1, pages_per_host=1,
                                                                          traps=False) as other:
        (seeds / "a.txt").write_text(web.seed_url + "\n")
        with _continuous(seeds, crawl_id, d) as proc:
            assert wait_for(lambda: "nothing is due; the next row comes due" in _log(tmp_path), 90)
            more = tmp_path / "more.txt"  # not in the crawl's seed folder: another command's inject
            more.write_text(other.seed_url + "\n")
            injected = nutch2("inject", more, "-crawlId", crawl_id, *d)
            assert injected.returncode == 0 and "injected=1" in injected.stderr, injected.stderr[-2000:]
            assert wait_for(lambda: other.requests(host=0, path="/"), 60), "the injected row was not crawled"
            err = _sigterm(proc)
        assert "crawl: rows came due meanwhile (another command's inject or updatedb); going on" in err


def test_a_waiting_continuous_crawl_outlasts_a_store_that_stops_answering(tmp_path: Path, monkeypatch,
                                                                          caplog) -> None:
    """While it waits, the crawl looks at the store every poll (for rows other commands add); a PostgreSQL
    restart then must not end a crawl that has nothing in flight: it says so once and looks again."""
    import logging

    from nutch2.errors import StoreUnavailable
    from nutch2.stores import open_store
    from nutch2.tools import crawl as crawl_tool
    from nutch2.tools.base import Run
    from nutch2.webpage import WebPage

    conf = conf_for(tmp_path, "memory", **{"crawl.continuous.poll.seconds": 0.2})
    since = int(time.time() * 1000)
    with open_store(conf, "w") as store:
        store.put("com.example:http/far", WebPage(fetch_time=since + 10**9))  # the next due row, days off
        store.flush()
    calls = {"n": 0}

    def flaky(*args, **kw):
        calls["n"] += 1
        if calls["n"] in (2, 3):  # the polls while the server restarts
            raise StoreUnavailable("cannot reach PostgreSQL at postgresql://db/nutch2 (connection refused)")
        if calls["n"] == 4:  # meanwhile another command injected a row, due now
            with open_store(conf, "w") as other:
                other.put("com.example:http/new", WebPage(fetch_time=int(time.time() * 1000)))
                other.flush()
        return open_store(*args, **kw)

    monkeypatch.setattr(crawl_tool, "open_store", flaky)
    tool = crawl_tool.Crawl(conf, "w", crawl_tool.CrawlArgs(continuous=True))
    tool.seeds_seen = None
    caplog.set_level(logging.INFO, logger="nutch2")
    tool.wait_for_work(Run(emit=lambda _line: None), since=since)
    said = [r.getMessage() for r in caplog.records]
    assert said.count("crawl: cannot reach PostgreSQL at postgresql://db/nutch2 (connection refused); looking "
                      "again every 0.2 s while waiting") == 1
    assert "crawl: the store answers again; waiting on" in said
    assert said[-1] == "crawl: rows came due meanwhile (another command's inject or updatedb); going on"


@contextmanager
def _continuous(seeds: Path, crawl_id: str, d: list[str]) -> Iterator[subprocess.Popen[str]]:
    """`crawl seeds -continuous` running in the background; killed at the end unless the test ended it."""
    proc = subprocess.Popen(crawl_command(seeds, crawl_id, d, "-continuous"), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _sigterm(proc: subprocess.Popen[str]) -> str:
    """Stop it as a service manager does; its stderr."""
    proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=30)[1]


def _log(tmp: Path) -> str:
    logs = list((tmp / "crawl").rglob("hadoop.log"))
    return "".join(p.read_text(errors="replace") for p in logs)


def _round_starts(log: str) -> list[float]:
    """The times (epoch seconds) of the log's "crawl: round N" lines, in order."""
    from datetime import datetime

    return [datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            for m in re.finditer(r"^(\S+ \S+) INFO +\d+ crawl: round \d+ ", log, re.M)]


def test_a_time_limit_ends_a_slow_crawl_and_the_same_command_finishes_it(tmp_path: Path) -> None:
    with TestWeb(hosts=2, pages_per_host=40, traps=False, page_delay=1.0) as web:  # ~3 s a page and host
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 2.0, "http.timeout": 10000})
        command = ("crawl", seeds, "-crawlId", "limited", "-rounds", "5", "-threads", "4", "-timeLimit", "1", *d)
        started = time.monotonic()
        first = nutch2(*command, timeout=600)
        took = time.monotonic() - started
        assert first.returncode == 0, first.stderr[-3000:]
        assert "crawl: the time limit (1 min) is reached; the same command goes on" in first.stderr
        assert re.search(r"^fetch: stopped after [\d.]+ s: ", first.stderr, re.M), first.stderr[-3000:]  # its summary
        assert took < 90, took  # a minute and a half
        conf = conf_for(tmp_path, "sqlite")
        assert any(p.status == CrawlStatus.UNFETCHED for p in rows(conf, "limited").values())
        for _ in range(4):  # the same command again, until the crawl is done
            again = nutch2(*command, timeout=600)
            assert again.returncode == 0, again.stderr[-3000:]
            assert "an earlier crawl ended at its time limit" in again.stderr
            if "the time limit (1 min) is reached" not in again.stderr:
                break
        else:
            pytest.fail("the crawl did not finish in 4 more runs")
        table = rows(conf, "limited")
        reachable = {u for u in web.crawl_model(rounds=5).all_requested() if passes_filters(conf, u)}
        assert {reverse_url(u) for u in reachable} <= set(table)
        assert all(table[reverse_url(u)].status == CrawlStatus.FETCHED for u in reachable)


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_continuous_crawl_gathers_rows_that_come_due_one_by_one(tmp_path: Path, pipeline: bool) -> None:
    """A page due every second made a round (4 jobs) of its own every time it came due: ~4,300 jobs an hour of a
    soak on PostgreSQL. After a round that took every due row, the next starts crawl.continuous.gather.seconds
    after that round began; a seed file dropped meanwhile is still taken at once."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    crawl_id = "gather" + uuid.uuid4().hex[:6]
    d = defines(tmp_path, "sqlite", **{"db.fetch.interval.default": 1, "crawl.continuous.gather.seconds": 6,
                                       "crawl.continuous.poll.seconds": 0.3, "crawl.pipeline": pipeline})
    with TestWeb(hosts=1, pages_per_host=1, traps=False) as web, TestWeb(hosts=1, pages_per_host=1,
                                                                          traps=False) as other:
        seed_path = web.seed_url.split(str(web.port), 1)[1]
        (seeds / "a.txt").write_text(web.seed_url + "\n")
        with _continuous(seeds, crawl_id, d) as proc:
            assert wait_for(lambda: len(web.requests(host=0, path=seed_path)) >= 3, 90)
            # the rounds' starts, as the crawl logs them (when a page is fetched within its round varies with the
            # machine's load: a CI saw fetches 4.2 s apart for rounds 6 s apart)
            starts = _round_starts(_log(tmp_path))[:3]
            gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
            assert len(starts) == 3 and min(gaps) >= 5.9, starts  # due after 1 s, gathered for 6
            assert "crawl: 1 row was due; the next round in " in _log(tmp_path)
            (seeds / "b.txt").write_text(other.seed_url + "\n")
            assert wait_for(lambda: other.requests(host=0, path="/"), 60), "the new seed was not crawled"
            err = _sigterm(proc)
        assert proc.returncode == 130, err[-3000:]
