"""End-to-end crawls of the local test web on the memory and sqlite stores (the crawl-cycle issue's proof)."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pytest

from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url
from tests.conftest import JOB_BACKENDS
from tests.crawlutil import cli, conf_for, defines, passes_filters, rows, seed_file
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=1.0) as w:
        yield w



@pytest.mark.parametrize("backend", JOB_BACKENDS)
def test_three_round_crawl_matches_the_model(web: TestWeb, tmp_path: Path, backend: str) -> None:
    web.reset_log()
    crawl_id = f"e2e{backend.replace(':', '_')}{uuid.uuid4().hex[:8]}"
    d = defines(tmp_path, backend)
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", crawl_id, "-rounds", "3",
               "-threads", "6", *d) == 0
    conf = conf_for(tmp_path, backend)
    table = rows(conf, crawl_id)
    model = web.crawl_model(rounds=3)
    expected = {u for u in model.all_requested() if passes_filters(conf, u)}
    requested = {f"http://{r.host}:{web.port}{r.path}" for r in web.requests() if r.path != "/robots.txt"}
    assert requested == expected
    for url, outcome in model.outcomes.items():
        if not passes_filters(conf, url):
            assert reverse_url(url) not in table
            continue
        page = table[reverse_url(url)]
        status = CrawlStatus(page.status).name
        if url in model.deferred:
            assert status == "UNFETCHED", url  # host deferred: untouched, generated again next round
        else:
            assert status == outcome, (url, status, outcome)
    # titles in every charset
    for url, spec in web.pages.items():
        page = table.get(reverse_url(url))
        if page is not None and spec.kind.startswith("charset"):
            assert page.title == spec.title, url
    # duplicates share a signature
    dups = [u for u, s in web.pages.items() if s.duplicate_of]
    assert dups
    for u in dups:
        assert table[reverse_url(u)].signature == table[reverse_url(web.pages[u].duplicate_of)].signature
    # retries scheduled for the 5xx page
    error = table[reverse_url(web.trap_url("/traps/error.html"))]
    assert error.status == CrawlStatus.RETRY and error.retries_since_fetch == 1
    # every row that was fetched has its marks cleared but UPDATEDB
    for page in table.values():
        assert not {"_gnmrk_", "_ftcmrk_", "__prsmrk__"} & set(page.markers)


def test_politeness(tmp_path: Path) -> None:
    delay = 0.4
    with TestWeb(hosts=3, pages_per_host=8, slow_seconds=0.5) as web:
        d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": delay})
        assert cli("crawl", seed_file(tmp_path, *(web.base_url(h) + "/" for h in range(3))), "-crawlId", "pol",
                   "-rounds", "3", "-threads", "8", *d) == 0
        robots = {h: web.robots_txt(h) for h in range(len(web.hosts))}
        assert any(r.path.startswith("/p/") for r in web.requests())
        for h, ip in enumerate(web.hosts):
            reqs = sorted(web.requests(host=ip), key=lambda r: r.arrived)
            crawl_delay = 1.0 if "Crawl-delay: 1" in robots[h][1] else delay
            for a, b in itertools.pairwise(reqs):
                if b.path == "/robots.txt":
                    continue  # a new fetch job (round) starts with robots.txt; politeness state is per job
                assert b.arrived - a.answered >= crawl_delay * 0.95, (ip, a.path, b.path, b.arrived - a.answered)
            assert web.in_flight_max(ip) <= 1
            assert not [r for r in reqs if r.path.startswith("/private/")]
        deferred_host = web.hosts[web.robots_503_host] if web.robots_503_host is not None else None
        if deferred_host:
            assert {r.path for r in web.requests(host=deferred_host)} <= {"/robots.txt"}


def test_batch_scoping(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    urls = [web.page_url(h, i) for h in range(3) for i in range(6)]
    assert cli("inject", seed_file(tmp_path, *urls), "-crawlId", "bs", *d) == 0
    capsys.readouterr()
    assert cli("generate", "-topN", "6", "-crawlId", "bs", *d) == 0
    b1 = capsys.readouterr().out.strip()
    assert cli("generate", "-topN", "6", "-crawlId", "bs", *d) == 0
    b2 = capsys.readouterr().out.strip()
    assert b1 != b2
    conf = conf_for(tmp_path, "sqlite")
    before = {k: p for k, p in rows(conf, "bs").items() if p.markers.get("_gnmrk_") == b2}
    assert len(before) == 6
    for step in ("fetch", "parse", "updatedb"):
        assert cli(step, b1, "-crawlId", "bs", *d) == 0
    after = rows(conf, "bs")
    # batch 2's rows keep their marks and fetch state; only link data (inlinks, OPIC score/cash, and the metadata
    # naming the updatedb run that wrote them) may change
    link_fields = {"inlinks", "score", "metadata"}
    for key, page in before.items():
        for name in page.loaded() - link_fields:
            assert getattr(after[key], name) == getattr(page, name), (key, name)
    fetched_b1 = [p for p in after.values() if p.markers.get("_updmrk_") == b1]
    assert len(fetched_b1) == 6


def test_unknown_batch_is_an_error(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    assert cli("inject", seed_file(tmp_path, web.seed_url), "-crawlId", "ub", *d) == 0
    assert cli("fetch", "123-456", "-crawlId", "ub", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "123-456" in err[-1] and "generate" in err[-1]
    assert cli("fetch", "-crawlId", "ub", *d) == 2


def test_generate_nothing_exits_1(web: TestWeb, tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    assert cli("inject", seed_file(tmp_path, web.seed_url), "-crawlId", "g1", *d) == 0
    assert cli("generate", "-crawlId", "g1", *d) == 0
    assert cli("generate", "-crawlId", "g1", *d) == 1  # the only row is already generated


def test_stop_file_stops_its_crawl_once(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """<data dir>/<crawlId>.STOP stops that crawl before its next round (exit 130, the command that goes on), is
    removed, and touches no other crawl; the same command then goes on."""
    d = defines(tmp_path, "sqlite")
    (tmp_path / "crawl").mkdir()
    stop_file = tmp_path / "crawl" / "st.STOP"
    stop_file.touch()
    web.reset_log()
    args = ("crawl", seed_file(tmp_path, web.seed_url), "-rounds", "2")
    assert cli(*args, "-crawlId", "other", *d) == 0 and web.requests()  # another crawl is not stopped
    web.reset_log()
    assert cli(*args, "-crawlId", "st", *d) == 130
    err = capsys.readouterr().err
    assert f"crawl: {stop_file} found (and removed): stopping before round 1" in err, err
    assert "run `nutch2 crawl " in err and web.requests() == [] and not stop_file.exists()
    assert cli(*args, "-crawlId", "st", *d) == 0 and web.requests()


def test_crawl_without_seeds_crawls_the_table(web: TestWeb, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`crawl -rounds 1` with no seed file: the rows injected before are generated and fetched (what the
    dashboard's Start-a-crawl form runs after its Inject form); with no crawl db (a mistyped -crawlId, seeds
    forgotten) it is one error line and a non-zero exit, and no table is made."""
    d = defines(tmp_path, "sqlite")
    assert cli("crawl", "-crawlId", "noseeds_typo", "-rounds", "1", *d) != 0
    err = capsys.readouterr().err
    assert "no crawl db at" in err and "run `nutch2 inject` first" in err and "Traceback" not in err, err
    assert not list(tmp_path.rglob("noseeds_typo*"))
    assert cli("inject", seed_file(tmp_path, web.page_url(1, 1)), "-crawlId", "noseeds", *d) == 0
    assert cli("crawl", "-crawlId", "noseeds", "-rounds", "1", *d) == 0
    page = rows(conf_for(tmp_path, "sqlite"), "noseeds")[reverse_url(web.page_url(1, 1))]
    assert CrawlStatus(page.status).name == "FETCHED"
