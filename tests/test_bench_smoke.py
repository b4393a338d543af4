"""Smoke test of the benchmarks: each one runs on a tiny web and prints its table. No time is asserted."""

from __future__ import annotations

import pytest

from tests.conftest import SERVICE_STORES

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_every_benchmark_runs_on_a_tiny_web() -> None:
    from bench.smoke import smoke

    sections = smoke()
    assert set(sections) >= {"web", "crawl", "politeness", "memory", "tablesize", "parse", "spark", "timeline",
                             "scrapypeer"}
    for name, text in sections.items():
        assert "|" in text and "---" in text, name  # a markdown table of figures


@pytest.mark.timeout(300)
def test_event_loop_probe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import deps

    deps.ensure(need_scrapy=False, need_wrk=False)
    from bench.eventloop import main

    assert main(["--hosts", "3", "--pages", "10", "--threads", "4", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "| nutch2 fetch |" in out and "| event-loop prototype |" in out


@pytest.mark.timeout(600)
def test_store_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.stores import main

    backends = ["sqlite"] + SERVICE_STORES
    assert main(["--quick", "--backends", ",".join(backends)]) == 0
    out = capsys.readouterr().out
    for b in backends:
        assert f"| {b} |" in out


@pytest.mark.timeout(300)
def test_scale_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import deps

    deps.ensure(need_scrapy=False, need_wrk=False)  # psutil
    from bench.stores import main

    assert main(["--scale", "--backends", "sqlite", "--sizes", "600", "--batch", "50", "--runs", "2"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| sqlite | 600 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 9 and cells[7] == "—"  # every step but index (no Solr given)
    assert all(c.endswith(" MB") for c in cells[3:7] + cells[8:]), row


@pytest.mark.timeout(300)
def test_job_rss_probe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import deps

    deps.ensure(need_scrapy=False, need_wrk=False)
    from bench.jobrss import main

    assert main(["--hosts", "3", "--pages", "10", "--threads", "2"]) == 0
    out = capsys.readouterr().out
    assert "| fetch1 |" in out and "| updatedb1 |" in out and "peak RSS" in out


@pytest.mark.timeout(600)
def test_crawl_and_roundtrips_benchmarks_run(capsys: pytest.CaptureFixture[str]) -> None:
    """bench.stores --crawl (a tiny web, a small inject) and bench.roundtrips on sqlite and the service stores
    (Cassandra's requests counted)."""
    from bench import deps

    deps.ensure(need_scrapy=False, need_wrk=False)  # psutil
    from bench.roundtrips import main as roundtrips
    from bench.stores import main

    backends = ["sqlite"] + [b for b in SERVICE_STORES if b == "cassandra"]
    assert main(["--crawl", "--backends", ",".join(backends), "--hosts", "2", "--pages", "5", "--seeds", "50",
                 "--runs", "1"]) == 0
    out = capsys.readouterr().out
    for b in backends:
        row = next(line for line in out.splitlines() if line.startswith(f"| {b} |"))
        assert row.split("|")[3].strip() == "10", row  # FETCHED: every page of the 2 x 5 web
    assert roundtrips(["--backends", ",".join(backends), "--size", "300", "--batch", "30", "--seeds", "40"]) == 0
    out = capsys.readouterr().out
    assert "| sqlite | updatedb |" in out
    if "cassandra" in backends:
        row = next(line for line in out.splitlines() if line.startswith("| cassandra | updatedb |"))
        assert int(row.split("|")[7]) > 0, row  # requests counted
