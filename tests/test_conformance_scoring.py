"""Conformance: row keys, OPIC scoring and the adaptive fetch schedule against Apache Nutch 2.x's test vectors.

Sources (vectors ported, not code), all from apache/nutch branch 2.x:
- src/test/org/apache/nutch/util/TestTableUtil.java (reverseUrl / unreverseUrl)
- src/plugin/scoring-opic/src/test/org/apache/nutch/scoring/opic/TestOPICScoringFilter.java: a four-site link graph
  walked for three rounds (inject, generate sort value, distribute cash, update); its table of scores is given to
  three decimals, truncated, so scores are compared to within 0.001
- src/test/org/apache/nutch/crawl/TestAdaptiveFetchSchedule.java (interval 100 s, the configured inc/dec rates)
"""

from __future__ import annotations

from pathlib import Path

import pytest

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"

REVERSE = [("http://foo.com/", "com.foo:http/"), ("http://foo.com:8900/", "com.foo:http:8900/"),
           ("ftp://bar.baz.com/", "com.baz.bar:ftp/"),
           ("http://bar.baz.com:8983/to/index.html?a=b&c=d", "com.baz.bar:http:8983/to/index.html?a=b&c=d"),
           ("http://foo.com?a=/a/b&c=0", "com.foo:http/?a=/a/b&c=0"), ("http://foo.com", "com.foo:http"),
           ("file:///var/www/index.html", ":file/var/www/index.html")]
UNREVERSE = [("com.foo:http/", "http://foo.com/"), ("com.foo:http:8900/", "http://foo.com:8900/"),
             ("com.baz.bar:ftp/", "ftp://bar.baz.com/"),
             ("com.baz.bar:http:8983/to/index.html?a=b&c=d", "http://bar.baz.com:8983/to/index.html?a=b&c=d"),
             ("com.foo:http/?a=/a/b&c=0", "http://foo.com/?a=/a/b&c=0"), ("com.foo:http", "http://foo.com"),
             (":file/var/www/index.html", "file:///var/www/index.html")]

OPIC_LINKS = {"http://a.com": ["http://b.com"], "http://b.com": ["http://a.com", "http://c.com"],
              "http://c.com": ["http://a.com", "http://b.com", "http://d.com"], "http://d.com": []}
OPIC_SEEDS = ["http://a.com", "http://b.com", "http://c.com"]
OPIC_SCORES = {
    1: {"http://a.com": 1.833, "http://b.com": 2.333, "http://c.com": 1.5, "http://d.com": 0.333},
    2: {"http://a.com": 2.666, "http://b.com": 3.333, "http://c.com": 2.166, "http://d.com": 0.278},
    3: {"http://a.com": 3.388, "http://b.com": 4.388, "http://c.com": 2.666, "http://d.com": 0.5},
}


def _conf():
    from nutch2.config import Configuration

    return Configuration(CONF_DIR, {})


def opic_rounds() -> dict[int, dict[str, float]]:
    """The test's simulation: rows in insertion order; each round sorts, distributes, then updates every row."""
    from nutch2.crawldb.scoring import ScoreDatum, ScoringFilters
    from nutch2.plugins.scoring_opic.opic import get_cash
    from nutch2.webpage import WebPage

    scoring = ScoringFilters.from_conf(_conf())
    rows: dict[str, tuple[WebPage, list[float]]] = {}
    fresh: dict[str, bool] = {}
    for url in OPIC_SEEDS:
        page = WebPage(url, score=1.0)
        scoring.injected_score(url, page)
        rows[url], fresh[url] = (page, []), True
    scores: dict[int, dict[str, float]] = {}
    for depth in (1, 2, 3):
        for url in list(rows):
            page, _ = rows[url]
            if fresh[url]:
                page.score, fresh[url] = scoring.generator_sort_value(url, page, page.score), False
            outlinks = [ScoreDatum(t) for t in OPIC_LINKS[url]]
            if get_cash(page):
                scoring.distribute_score_to_outlinks(url, page, outlinks)
            for datum in outlinks:
                if datum.url in rows:
                    rows[datum.url][1].append(datum.score)
                else:
                    new = WebPage(datum.url)
                    scoring.initial_score(datum.url, new)
                    rows[datum.url], fresh[datum.url] = (new, [datum.score]), True
        for url, (page, inlinks) in rows.items():
            scoring.update_score(url, page, [ScoreDatum("", score=x) for x in inlinks])
            inlinks.clear()
        scores[depth] = {url: page.score for url, (page, _) in rows.items()}
    return scores


def adaptive_intervals() -> tuple[list[int], list[int]]:
    """(nutch2's intervals, the test's expected ones) for UNKNOWN, MODIFIED, NOTMODIFIED from 100 s."""
    from nutch2.crawldb.schedule import STATUS_MODIFIED, STATUS_NOTMODIFIED, STATUS_UNKNOWN, AdaptiveFetchSchedule
    from nutch2.webpage import WebPage

    conf = _conf()
    schedule = AdaptiveFetchSchedule(conf)
    inc = conf.get_float("db.fetch.schedule.adaptive.inc_rate")
    dec = conf.get_float("db.fetch.schedule.adaptive.dec_rate")
    page = WebPage("k", status=1, fetch_interval=100, score=1.0, fetch_time=0)
    got = []
    for state in (STATUS_UNKNOWN, STATUS_MODIFIED):
        schedule.set_fetch_schedule(page, page.fetch_time, page.modified_time, 0, 0, state)
        got.append(page.fetch_interval)
    page.fetch_interval = 100
    schedule.set_fetch_schedule(page, page.fetch_time, page.modified_time, 0, 0, STATUS_NOTMODIFIED)
    got.append(page.fetch_interval)
    return got, [100, int(100 - 100 * dec), int(100 + 100 * inc)]


@pytest.mark.parametrize(("url", "key"), REVERSE)
def test_reverse_url(url: str, key: str) -> None:
    from nutch2.urls.tableutil import reverse_url

    assert reverse_url(url) == key


@pytest.mark.parametrize(("key", "url"), UNREVERSE)
def test_unreverse_url(key: str, url: str) -> None:
    from nutch2.urls.tableutil import unreverse_url

    assert unreverse_url(key) == url


def test_opic_scores() -> None:
    scores = opic_rounds()
    for depth, expected in OPIC_SCORES.items():
        for url, score in expected.items():
            assert scores[depth][url] == pytest.approx(score, abs=1e-3), (depth, url)


def test_adaptive_schedule() -> None:
    got, expected = adaptive_intervals()
    assert got == expected


def agreement() -> dict[str, tuple[int, int]]:
    """{source: (agree, total)} for tests/conformance.py."""
    from nutch2.urls.tableutil import reverse_url, unreverse_url

    table = sum(reverse_url(u) == k for u, k in REVERSE) + sum(unreverse_url(k) == u for k, u in UNREVERSE)
    scores = opic_rounds()
    opic = sum(abs(scores[d][u] - s) <= 1e-3 for d, row in OPIC_SCORES.items() for u, s in row.items())
    got, expected = adaptive_intervals()
    return {"nutch TestTableUtil": (table, len(REVERSE) + len(UNREVERSE)),
            "nutch TestOPICScoringFilter": (opic, sum(len(r) for r in OPIC_SCORES.values())),
            "nutch TestAdaptiveFetchSchedule": (sum(a == b for a, b in zip(got, expected, strict=True)), len(expected))}
