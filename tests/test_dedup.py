"""DeduplicationJob on the table, on the embedded stores and both runners: one row per signature keeps its status,
the others become DUPLICATE by Nutch's compare order; a rerun changes nothing; `nutch2 dedup` killed at several
points and run again gives the rows of an uninterrupted run. With SimHash signatures, near-duplicates too: pages
that differ in a date and a counter keep one row, different articles both, best first over chains of near rows,
as a brute-force model of the rule decides."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nutch2.config import Configuration
from nutch2.jobs.dedup import DeduplicationJob
from nutch2.mapred.frameworks import make_runner
from nutch2.parse.signature import hamming_distance, simhash_signature
from nutch2.rowkeys import NOINDEX_KEY
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor
from nutch2.stores import open_store
from nutch2.stores.base import DataStore
from nutch2.urls.domains import host_of
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import ParseStatus, WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.helpers import KILLED, news_page, nutch2
from tests.pagesite import PageSite


@pytest.fixture(params=["memory", "sqlite:local", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[DataStore]:
    s = open_store(make_conf(tmp_path, backend), "dd" + uuid.uuid4().hex[:10])
    yield s
    s.drop_schema()
    s.close()


def add(store: DataStore, url: str, signature: bytes | None, *, score: float = 1.0, fetched: int = 1000,
        status: CrawlStatus = CrawlStatus.FETCHED, metadata: dict[str, bytes] | None = None,
        parse_minor: ParseMinor = ParseMinor.OK) -> str:
    key = reverse_url(url)
    page = WebPage(key, status=int(status), score=score, fetch_time=fetched,
                   parse_status=ParseStatus(ParseMajor.SUCCESS, parse_minor), metadata=metadata or {})
    if signature is not None:
        page.signature = signature
    store.put(key, page)
    return key


def statuses(store: DataStore) -> dict[str, int]:
    store.flush()
    return {p.key: p.status for p in store.scan(fields=["status"])}


def dedup(tmp_path: Path, backend: str, store: DataStore, tasks: int = 2, **props: object) -> dict[str, int]:
    conf = make_conf(tmp_path, backend, **props)
    return make_runner(conf, tasks).run(DeduplicationJob(conf), store).as_dict()


def duplicates(store: DataStore) -> set[str]:
    return {k for k, s in statuses(store).items() if s == CrawlStatus.DUPLICATE}


def test_all_but_the_best_of_a_signature_become_duplicates(tmp_path: Path, backend: str, store: DataStore) -> None:
    a = b"\x01" * 16
    low = add(store, "http://a.example/low", a, score=0.5)
    high = add(store, "http://b.example/high", a, score=2.0)  # the highest score wins
    newest = add(store, "http://c.example/x", b"\x02" * 16, fetched=3000)  # same score: the newest fetch wins
    older = add(store, "http://d.example/x", b"\x02" * 16, fetched=2000)
    short = add(store, "http://e.example/ab", b"\x03" * 16)  # same score and time: the shortest URL wins
    longer = add(store, "http://e.example/abc", b"\x03" * 16)
    alone = add(store, "http://f.example/", b"\x04" * 16)
    unparsed = add(store, "http://g.example/", None)
    gone = add(store, "http://h.example/", a, status=CrawlStatus.GONE, score=9.0)  # not a page any more
    unchanged = add(store, "http://i.example/", b"\x05" * 16, status=CrawlStatus.NOTMODIFIED, score=3.0)
    twin = add(store, "http://j.example/", b"\x05" * 16)

    counters = dedup(tmp_path, backend, store)
    assert counters["duplicates"] == 4 and counters["signatures"] == 5
    got = statuses(store)
    assert {k for k, s in got.items() if s == CrawlStatus.DUPLICATE} == {low, older, longer, twin}
    assert got[high] == got[newest] == got[short] == got[alone] == got[unparsed] == CrawlStatus.FETCHED
    assert got[gone] == CrawlStatus.GONE and got[unchanged] == CrawlStatus.NOTMODIFIED


def test_a_copy_the_index_never_holds_keeps_no_page_out(tmp_path: Path, backend: str, store: DataStore) -> None:
    """A noindex copy (X-Robots-Tag on a print URL) or a meta-refresh page that outranks the page with the same bytes
    was kept as the original: the page became DUPLICATE, clean deleted it, and the text was in no index."""
    sig = b"\x05" * 16
    page = add(store, "http://a.example/article", sig, score=1.0)
    add(store, "http://a.example/print", sig, score=3.0, metadata={NOINDEX_KEY: b"y"})
    add(store, "http://a.example/r", sig, score=2.0, parse_minor=ParseMinor.REDIRECT)
    dedup(tmp_path, backend, store)
    assert duplicates(store) == set()
    assert statuses(store)[page] == CrawlStatus.FETCHED


def test_a_rerun_changes_nothing(tmp_path: Path, backend: str, store: DataStore) -> None:
    for i in range(30):
        add(store, f"http://h{i % 7}.example/p{i}", bytes([i % 4]) * 16, score=float(i % 5), fetched=1000 + i)
    first = dedup(tmp_path, backend, store)
    after_first = statuses(store)
    second = dedup(tmp_path, backend, store, tasks=1)
    assert statuses(store) == after_first
    assert first["duplicates"] == 26 and second.get("duplicates", 0) == 0


def fill(conf: Configuration, crawl_id: str, n: int = 400) -> None:
    """n fetched rows over n / 4 signatures (scores and fetch times varied) in a table of its own."""
    with open_store(conf, crawl_id) as store:
        for i in range(n):
            add(store, f"http://h{i % 13}.example/p{i}", (i % (n // 4)).to_bytes(4, "big") * 4,
                score=float(i % 7), fetched=1000 + i % 11)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
@pytest.mark.parametrize("kill_at", [1, 3, 6])
def test_dedup_killed_then_run_again_gives_an_uninterrupted_runs_rows(tmp_path: Path, backend: str,
                                                                        kill_at: int) -> None:
    props = {"storage.write.batch.size": 25}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    fill(conf, "whole")
    fill(conf, "killed")
    assert nutch2("dedup", "-crawlId", "whole", *d).returncode == 0
    killed = nutch2("dedup", "-crawlId", "killed", *d, failpoints=f"store.flush={kill_at}")
    # the point is reached in the command (killed) or, on the processes runner, in a worker: the job then fails in
    # one line naming the dead worker
    assert killed.returncode == KILLED or (killed.returncode == 1 and "Traceback" not in killed.stderr), \
        killed.stderr[-2000:]
    partly = sum(p.status == CrawlStatus.DUPLICATE for p in rows(conf, "killed").values())
    assert partly < 300  # killed before it was done
    again = nutch2("dedup", "-crawlId", "killed", *d)
    assert again.returncode == 0, again.stderr[-2000:]
    whole = {k: p.status for k, p in rows(conf, "whole").items()}
    assert {k: p.status for k, p in rows(conf, "killed").items()} == whole
    assert sum(s == CrawlStatus.DUPLICATE for s in whole.values()) == 300


# ---------------------------------------------------------------- near-duplicates (db.signature.class=simhash)
SIMHASH = {"db.signature.class": "simhash"}
MONDAY, TUESDAY = ("Monday, 4 March 2024 at 10:32", 12345), ("Tuesday, 5 March 2024 at 11:47", 12391)


def simhash(article: str, when: tuple[str, int] = MONDAY) -> bytes:
    return simhash_signature(" ".join(news_page(article, *when)))


def test_pages_that_differ_in_a_date_and_a_counter_keep_one_row(tmp_path: Path, backend: str,
                                                                store: DataStore) -> None:
    monday, tuesday = simhash("harbour"), simhash("harbour", TUESDAY)
    assert 0 < hamming_distance(monday, tuesday) <= 3  # not one signature: exact dedup keeps both
    old = add(store, "http://news.example/harbour?day=4", monday, fetched=1000)
    new = add(store, "http://news.example/harbour?day=5", tuesday, fetched=2000)  # the newest fetch wins
    other = add(store, "http://news.example/library", simhash("library"), fetched=1000)  # another article

    assert dedup(tmp_path, backend, store).get("duplicates", 0) == 0  # md5 (the default): three signatures
    counters = dedup(tmp_path, backend, store, **SIMHASH)
    assert counters["duplicates"] == counters["near_duplicates"] == counters["near_pairs"] == 1
    got = statuses(store)
    assert got[old] == CrawlStatus.DUPLICATE
    assert got[new] == got[other] == CrawlStatus.FETCHED


def test_near_duplicates_follow_the_scope(tmp_path: Path, backend: str, store: DataStore) -> None:
    a = add(store, "http://a.example/harbour", simhash("harbour"), score=2.0)
    b = add(store, "http://b.example/harbour", simhash("harbour", TUESDAY))  # a near copy on another host
    c = add(store, "http://c.example/copy", simhash("harbour"))  # the same signature on a third host
    counters = dedup(tmp_path, backend, store, **SIMHASH)  # dedup.simhash.scope=host, the default
    assert duplicates(store) == {c}  # one signature: duplicates across hosts as for every signature class
    assert counters["duplicates"] == 1 and counters.get("near_duplicates", 0) == 0
    counters = dedup(tmp_path, backend, store, **SIMHASH, **{"dedup.simhash.scope": "all"})
    assert duplicates(store) == {b, c} and counters["near_duplicates"] == 1
    assert statuses(store)[a] == CrawlStatus.FETCHED


def bits(*positions: int) -> int:
    return sum(1 << p for p in positions)


def test_a_chain_of_near_rows_is_resolved_best_first(tmp_path: Path, backend: str, store: DataStore) -> None:
    """A ~ B and B ~ C, A not near C: A kept, B a duplicate of A, C kept (its only near row is not in the index);
    ranked B first, B is kept and both others are its duplicates."""
    x = random.Random(5).getrandbits(64)
    sig = {name: v.to_bytes(8, "big") for name, v in
           (("a", x), ("b", x ^ bits(1, 17, 33)), ("c", x ^ bits(1, 17, 33, 2, 18, 34)))}
    assert [hamming_distance(sig["a"], sig["b"]), hamming_distance(sig["b"], sig["c"]),
            hamming_distance(sig["a"], sig["c"])] == [3, 3, 6]
    a = add(store, "http://h.example/a", sig["a"], score=3.0)
    b = add(store, "http://h.example/b", sig["b"], score=2.0)
    c = add(store, "http://h.example/c", sig["c"], score=1.0)
    counters = dedup(tmp_path, backend, store, **SIMHASH)
    assert duplicates(store) == {b} and counters["near_pairs"] == 2
    # ranked B, A, C
    store.put(b, WebPage(b, status=int(CrawlStatus.FETCHED), score=5.0))
    dedup(tmp_path, backend, store, **SIMHASH)
    assert duplicates(store) == {a, c}


def test_distance_zero_and_the_other_signature_classes_are_exact(tmp_path: Path, backend: str,
                                                                 store: DataStore) -> None:
    x = random.Random(6).getrandbits(64)
    one = add(store, "http://h.example/1", x.to_bytes(8, "big"))
    twin = add(store, "http://h.example/twin", x.to_bytes(8, "big"), fetched=500)
    add(store, "http://h.example/2", (x ^ 1).to_bytes(8, "big"))  # one bit apart
    for props in ({**SIMHASH, "dedup.simhash.distance": 0}, {"db.signature.class": "md5"},
                  {"db.signature.class": "textprofile"}):
        counters = dedup(tmp_path, backend, store, **props)
        assert duplicates(store) == {twin} and counters["signatures"] == 2, props
    dedup(tmp_path, backend, store, **SIMHASH)
    assert duplicates(store) == {twin, reverse_url("http://h.example/2")}
    assert statuses(store)[one] == CrawlStatus.FETCHED


def expected_duplicates(table: dict[str, WebPage], distance: int, scope: str) -> set[str]:
    """The rule, by brute force: all but the best of one signature; then best first, a row near a kept one."""
    def rank(key: str) -> tuple:
        page = table[key]
        return -page.score, -page.fetch_time, len(unreverse_url(key)), key

    def near(a: str, b: str) -> bool:
        sa, sb = table[a].signature, table[b].signature
        return (len(sa) == len(sb) == 8 and hamming_distance(sa, sb) <= distance
                and (scope == "all" or host_of(unreverse_url(a)) == host_of(unreverse_url(b))))

    live = sorted((k for k, p in table.items() if p.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)
                   and p.signature), key=rank)
    dups: set[str] = set()
    winners: dict[bytes, str] = {}
    for key in live:
        if table[key].signature in winners:
            dups.add(key)
        else:
            winners[table[key].signature] = key
    kept: list[str] = []
    for key in sorted(winners.values(), key=rank):
        if any(near(key, k) for k in kept):
            dups.add(key)
        else:
            kept.append(key)
    return dups


def near_table(seed: int, n: int, clusters: int = 8, hosts: int = 3, flips: int = 4) -> dict[str, WebPage]:
    """n rows around a few SimHashes: each one bit-flip steps from its cluster's (some exact copies), hosts, scores
    and fetch times drawn, a few rows with 16-byte (md5) signatures."""
    rng = random.Random(seed)
    centers = [rng.getrandbits(64) for _ in range(clusters)]
    out = {}
    for i in range(n):
        value = centers[rng.randrange(clusters)]
        for bit in rng.sample(range(64), rng.randrange(flips + 1)):
            value ^= 1 << bit
        url = f"http://h{rng.randrange(hosts)}.example/p{i}"
        signature = value.to_bytes(8, "big") if rng.random() > 0.05 else value.to_bytes(16, "big")
        out[reverse_url(url)] = WebPage(reverse_url(url), status=int(CrawlStatus.FETCHED), signature=signature,
                                        score=float(rng.randrange(3)), fetch_time=1000 + rng.randrange(3),
                                        parse_status=ParseStatus(ParseMajor.SUCCESS, ParseMinor.OK))
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(2, 60), distance=st.integers(1, 5),
       scope=st.sampled_from(["host", "all"]))
def test_near_dedup_decides_as_the_rule(tmp_path: Path, seed: int, n: int, distance: int, scope: str) -> None:
    """The map/reduce (bands, pairs, best first) marks the rows the brute-force rule marks, and a rerun no more."""
    table = near_table(seed, n)
    props = {**SIMHASH, "dedup.simhash.distance": distance, "dedup.simhash.scope": scope}
    conf = make_conf(tmp_path, "memory:local", **props)
    store = open_store(conf, "nd" + uuid.uuid4().hex[:10])
    try:
        for key, page in table.items():
            store.put(key, page)
        make_runner(conf, 2).run(DeduplicationJob(conf), store)
        assert duplicates(store) == expected_duplicates(table, distance, scope)
        again = make_runner(conf, 3).run(DeduplicationJob(conf), store)
        assert again.get("duplicates") == 0
    finally:
        store.drop_schema()
        store.close()


def test_bad_dedup_properties_end_in_one_line(tmp_path: Path) -> None:
    for prop, fix in (("dedup.simhash.scope=site", "use host or all"),
                      ("dedup.simhash.distance=20", "between 0 (exact duplicates only) and 15"),
                      ("db.signature.class=sha1", "use md5, textprofile or simhash")):
        out = nutch2("dedup", "-crawlId", "bad", *defines(tmp_path, "sqlite"), "-D", prop)
        assert out.returncode == 1 and fix in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def fill_near(conf: Configuration, crawl_id: str) -> dict[str, WebPage]:
    table = near_table(11, 400, clusters=40, hosts=4)
    with open_store(conf, crawl_id) as store:
        for key, page in table.items():
            store.put(key, page)
    return table


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
@pytest.mark.parametrize("kill_at", [2, 4, 7])
def test_near_dedup_killed_then_run_again_gives_an_uninterrupted_runs_rows(tmp_path: Path, backend: str,
                                                                             kill_at: int) -> None:
    props = {"storage.write.batch.size": 10, **SIMHASH}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    table = fill_near(conf, "whole")
    fill_near(conf, "killed")
    assert nutch2("dedup", "-crawlId", "whole", *d).returncode == 0
    killed = nutch2("dedup", "-crawlId", "killed", *d, failpoints=f"store.flush={kill_at}")
    assert killed.returncode == KILLED or (killed.returncode == 1 and "Traceback" not in killed.stderr), \
        killed.stderr[-2000:]
    whole = {k: p.status for k, p in rows(conf, "whole").items()}
    expected = expected_duplicates(table, 3, "host")
    assert {k for k, s in whole.items() if s == CrawlStatus.DUPLICATE} == expected
    partly = {k for k, p in rows(conf, "killed").items() if p.status == CrawlStatus.DUPLICATE}
    assert partly < expected  # killed before it was done
    if kill_at == 7:  # on both runners, in the last step: every exact duplicate written, some near ones
        assert expected_duplicates(table, 0, "host") < partly
    again = nutch2("dedup", "-crawlId", "killed", *d)
    assert again.returncode == 0, again.stderr[-2000:]
    assert {k: p.status for k, p in rows(conf, "killed").items()} == whole


def news_html(article: str, when: tuple[str, int]) -> str:
    body = "".join(f"<p>{block}</p>" for block in news_page(article, *when))
    return f"<html><head><title>The Coast Gazette: {article}</title></head><body>{body}</body></html>"


@pytest.mark.slow
def test_a_crawl_with_simhash_then_dedup_marks_the_near_copy(tmp_path: Path) -> None:
    """Two pages of one article on one site, a day apart (date and counter differ), and another article: after a
    crawl with db.signature.class=simhash, dedup marks one of the two DUPLICATE."""
    home = ('<html><body><a href="/harbour/4.html">Monday</a> <a href="/harbour/5.html">Tuesday</a> '
            '<a href="/library.html">Library</a></body></html>')
    pages = {"/": home, "/harbour/4.html": news_html("harbour", MONDAY),
             "/harbour/5.html": news_html("harbour", TUESDAY), "/library.html": news_html("library", MONDAY)}
    d = defines(tmp_path, "sqlite", **SIMHASH)
    with PageSite(pages) as site:
        assert cli("crawl", seed_file(tmp_path, site.url("/")), "-crawlId", "near", "-rounds", 2, *d) == 0
        urls = {path: reverse_url(site.url(path)) for path in pages}
    table = rows(conf_for(tmp_path, "sqlite", **SIMHASH), "near")
    assert {table[urls[p]].status for p in pages} == {CrawlStatus.FETCHED}
    assert 0 < hamming_distance(table[urls["/harbour/4.html"]].signature, table[urls["/harbour/5.html"]].signature) <= 3
    assert cli("dedup", "-crawlId", "near", *d) == 0
    table = rows(conf_for(tmp_path, "sqlite", **SIMHASH), "near")
    got = {p: table[urls[p]].status for p in pages}
    assert sorted(got.values()) == sorted([CrawlStatus.FETCHED] * 3 + [CrawlStatus.DUPLICATE])
    assert got["/"] == got["/library.html"] == CrawlStatus.FETCHED
