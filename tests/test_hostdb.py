"""The host database (updatehostdb, readhostdb, generate's host expressions, /hosts) on every store and runner."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
import requests

from nutch2.crawldb.hostdb import EXPR_NAMES, PREFIX, HostDatum, host_table
from nutch2.crawldb.hostexpr import HostExpr
from nutch2.errors import ConfigError
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import host_of_key
from tests.conftest import DURABLE_STORES, JOB_BACKENDS
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.helpers import KILLED, nutch2
from tests.hostile_server import refused_url
from tests.searchapp import serving
from tests.testweb import TestWeb

NUTCH_FIELD = {CrawlStatus.INJECTED: "unfetched", CrawlStatus.UNFETCHED: "unfetched", CrawlStatus.RETRY: "unfetched",
               CrawlStatus.FETCHED: "fetched", CrawlStatus.GONE: "gone", CrawlStatus.REDIR_TEMP: "redirTemp",
               CrawlStatus.REDIR_PERM: "redirPerm", CrawlStatus.NOTMODIFIED: "notModified",
               CrawlStatus.DUPLICATE: "duplicate"}


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=4, slow_seconds=0.5) as w:
        yield w


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    """The stdout lines of `nutch2 <args>` run in this process (exit 0 asserted)."""
    capsys.readouterr()
    assert cli(*args) == 0, args
    return capsys.readouterr().out.splitlines()


def _readhostdb(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, str]]:
    """readhostdb's lines as {host: {field: value}}."""
    out = {}
    for line in _out(capsys, "readhostdb", *args):
        host, *pairs = line.split("\t")
        out[host] = dict(p.split("=", 1) for p in pairs)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("backend", JOB_BACKENDS)
def test_host_counts_match_readdb_per_host_and_generate_skips_failing_hosts(
        web: TestWeb, tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A crawl of the test web (404, 410, 500, robots-denied pages, 301 and 302 redirects on host 0) and a dead
    host: each host's counts are readdb -stats -sort's and the table's; a rerun gives the same host table; generate
    with generate.hostdb.skip.expr leaves the dead host out, and without it takes its row."""
    crawl_id = f"hdb{backend.replace(':', '_')}{uuid.uuid4().hex[:6]}"
    dead = refused_url("/")
    d = [*defines(tmp_path, backend, **{"http.timeout": 2000}), "-crawlId", crawl_id]
    assert cli("crawl", seed_file(tmp_path, web.seed_url, dead), "-rounds", "3", "-threads", "4", "-hostdbupdate",
               *d) == 0  # the crawl updates the host table after each round
    dead_host = dead.split("//")[1].split(":")[0]

    per_host = {}
    for line in _out(capsys, "readdb", "-stats", "-sort", *d):
        if line.startswith("   "):
            host, n = line.strip().split(":\t")
            per_host[host] = int(n)
    got = _readhostdb(capsys, *d)
    assert {h: int(v["numRecords"]) for h, v in got.items()} == per_host
    assert dead_host in per_host and len(per_host) >= 4

    table = rows(conf_for(tmp_path, backend), crawl_id)
    expected: dict[str, Counter[str]] = {}
    for page in table.values():
        expected.setdefault(host_of_key(page.key), Counter())[NUTCH_FIELD[CrawlStatus(page.status)]] += 1
    for host, counts in expected.items():
        for name in ("unfetched", "fetched", "gone", "redirTemp", "redirPerm", "notModified", "duplicate"):
            assert int(got[host][name]) == counts[name], (host, name)
    home = got[web.hosts[0]]
    assert int(home["gone"]) >= 4 and int(home["redirTemp"]) == 1 and int(home["redirPerm"]) == 1
    assert home["numFailures"] == "0"  # the 500 is an answer, not a failure to connect
    assert home["homepageUrl"] == web.seed_url
    assert got[dead_host]["numFailures"] == got[dead_host]["connectionFailures"] == "1"
    assert got[dead_host]["homepageUrl"] == ""

    assert _out(capsys, "readhostdb", "-dumpHostnames", "-expr", "numFailures > 0", *d) == [dead_host]
    homepages = _out(capsys, "readhostdb", "-dumpHomepages", *d)
    assert web.seed_url in homepages and all(dead_host not in u for u in homepages)
    assert set(_readhostdb(capsys, "-get", dead_host, *d)) == {dead_host}

    _out(capsys, "updatehostdb", *d)
    again = _readhostdb(capsys, *d)
    assert {h: {k: v for k, v in f.items() if k != "lastCheck"} for h, f in again.items()} == \
        {h: {k: v for k, v in f.items() if k != "lastCheck"} for h, f in got.items()}

    # generate, two days on (the dead host's RETRY row is due a day later): skipped by the expression...
    skip = ["-D", "generate.hostdb.skip.expr=numFailures > 0"]
    batch = _out(capsys, "generate", "-adddays", "2", *skip, *d)[-1]
    marked = {k: p for k, p in rows(conf_for(tmp_path, backend), crawl_id).items()
              if p.markers.get("_gnmrk_") == batch}
    assert marked and all(host_of_key(k) != dead_host for k in marked)
    # ... and taken without it
    batch = _out(capsys, "generate", "-adddays", "2", *d)[-1]
    marked = {k for k, p in rows(conf_for(tmp_path, backend), crawl_id).items() if p.markers.get("_gnmrk_") == batch}
    assert {host_of_key(k) for k in marked} == {dead_host}


@pytest.mark.parametrize("backend", ["sqlite", *[b for b in DURABLE_STORES if b != "sqlite"]])
def test_generate_caps_each_host_by_the_max_count_expression(tmp_path: Path, backend: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    crawl_id = f"cap{uuid.uuid4().hex[:8]}"
    d = [*defines(tmp_path, backend), "-crawlId", crawl_id]
    big = [f"http://big.example/p{i}" for i in range(6)]
    small = [f"http://small.example/p{i}" for i in range(3)]
    v6 = [f"http://[2001:db8::1]/p{i}" for i in range(5)]  # its key's host is "[2001:db8::1]", its URL's without []
    assert cli("inject", seed_file(tmp_path, *big, *small, *v6), *d) == 0
    _out(capsys, "updatehostdb", *d)
    batch = _out(capsys, "generate", "-D", "generate.max.count.expr=2 if numRecords > 3 else -1", *d)[-1]
    got = Counter(host_of_key(k) for k, p in rows(conf_for(tmp_path, backend), crawl_id).items()
                  if p.markers.get("_gnmrk_") == batch)
    assert got == {"big.example": 2, "small.example": 3, "[2001:db8::1]": 2}


@pytest.mark.parametrize("backend", DURABLE_STORES)
def test_updatehostdb_killed_and_run_again_gives_the_same_host_table(tmp_path: Path, backend: str) -> None:
    """Killed after its second host record; the rerun writes every host and removes a host with no row left."""
    crawl_id = f"kill{uuid.uuid4().hex[:8]}"
    d = [*defines(tmp_path, backend), "-crawlId", crawl_id]
    urls = [f"http://h{h}.example/p{i}" for h in range(5) for i in range(h + 1)]
    assert nutch2("inject", seed_file(tmp_path, *urls), *d).returncode == 0
    conf = conf_for(tmp_path, backend)
    with open_store(conf, crawl_id) as store:
        store.put_state(PREFIX + "old.example", HostDatum(numRecords=9).to_json())
    killed = nutch2("updatehostdb", *d, failpoints="hostdb.write=2")
    # the point is reached in the driver's reduce task (the command is killed) or in a worker's (the job fails
    # with one line): the two reduce tasks write at once, so which comes first is a race
    died = killed.returncode == 1 and "a worker process died" in killed.stderr
    assert killed.returncode == KILLED or died, (killed.returncode, killed.stderr)
    with open_store(conf, crawl_id) as store:
        partial = host_table(store)
    assert "old.example" in partial  # hosts without rows are removed only once every host is written
    assert nutch2("updatehostdb", *d).returncode == 0
    with open_store(conf, crawl_id) as store:
        table = host_table(store)
    assert {h: (t.numRecords, t.unfetched) for h, t in table.items()} == \
        {f"h{h}.example": (h + 1, h + 1) for h in range(5)}


def test_expressions_are_evaluated_safely() -> None:
    values = HostDatum(fetched=10, gone=3, numFailures=6).values("a.example")
    assert HostExpr("numFailures > 5", EXPR_NAMES, "x").holds(values)
    assert HostExpr("fetched > 5 && !(gone > 3) || false", EXPR_NAMES, "x").holds(values)
    assert HostExpr("100 if fetched >= 10 else 2", EXPR_NAMES, "x").number(values) == 100
    assert HostExpr("host == 'a.example' and gone != 0", EXPR_NAMES, "x").holds(values)
    assert HostExpr("(fetched + gone) * 2 // 3 % 5 - 1", EXPR_NAMES, "x").number(values) == 2
    for bad, cause in (("__import__('os').system('id')", "call is not allowed"),
                       ("fetched.real", "attribute is not allowed"), ("nope > 1", "'nope' is not a host field"),
                       ("lambda: 1", "lambda is not allowed"), ("fetched >", "it does not parse"),
                       ("[1][0]", "subscript is not allowed"), ("None", "not a number or a string")):
        with pytest.raises(ConfigError) as e:
            HostExpr(bad, EXPR_NAMES, "generate.hostdb.skip.expr")
        assert cause in str(e.value) and "\n" not in str(e.value), (bad, str(e.value))
    with pytest.raises(ConfigError, match="gives True, not a finite number"):
        HostExpr("fetched > 1", EXPR_NAMES, "x").number(values)
    with pytest.raises(ConfigError, match="gives inf, not a finite number"):  # a cap int() cannot take
        HostExpr("1e999", EXPR_NAMES, "x").number(values)
    with pytest.raises(ConfigError, match="arithmetic on str and int"):  # a string of gigabytes, from a URL's ?expr=
        HostExpr("host * 1000000000", EXPR_NAMES, "x").holds(values)
    # thousands of operators in a row, from a URL's ?expr=: Python's parser or the evaluation would run out of stack
    for deep in ("1+" * 5000 + "1", "!" * 8000 + "1", "-" * 8000 + "1", "1+" * 990 + "1"):
        with pytest.raises(ConfigError, match="nests deeper than 100 levels"):
            HostExpr(deep, EXPR_NAMES, "x").holds(values)
    assert HostExpr(" and ".join(["fetched > 1"] * 500), EXPR_NAMES, "x").holds(values)  # long, but flat


def test_bad_expressions_are_one_line_errors(tmp_path: Path) -> None:
    d = [*defines(tmp_path, "sqlite"), "-crawlId", "bad"]
    assert nutch2("inject", seed_file(tmp_path, "http://a.example/"), *d).returncode == 0
    p = nutch2("readhostdb", "-expr", "open('x')", *d)
    assert p.returncode == 2 and "-expr=\"open('x')\": call is not allowed" in p.stderr
    p = nutch2("generate", "-D", "generate.hostdb.skip.expr=numFailures >", *d)
    assert p.returncode == 1 and "generate.hostdb.skip.expr='numFailures >': it does not parse" in p.stderr
    p = nutch2("generate", "-D", "generate.max.count.expr=2", "-D", "generate.count.mode=domain", *d)
    assert p.returncode == 1 and "needs generate.count.mode=host" in p.stderr
    p = nutch2("readhostdb", "-get", "nowhere.example", *d)
    assert p.returncode == 1 and "nowhere.example is not in the host table; run updatehostdb" in p.stderr
    p = nutch2("readhostdb", *d)  # never computed: not an empty listing that reads as "no host matched"
    assert p.returncode == 1 and p.stdout == "" and \
        "the host table is empty; compute it from the rows with `nutch2 updatehostdb -crawlId bad`" in p.stderr
    assert nutch2("updatehostdb", *d).returncode == 0
    p = nutch2("readhostdb", "-expr", "fetched > 0", *d)  # computed, and no host matches: exit 0, nothing printed
    assert p.returncode == 0 and p.stdout == "", p.stderr


def test_hosts_page_lists_the_host_table(tmp_path: Path) -> None:
    """/hosts on a real app served by uvicorn: the host table's counts, sorted and filtered, escaped; a bad
    expression or sort is one message and a 400."""
    from nutch2.index.solr import SolrClient
    from nutch2.searcher.app import create_app
    from nutch2.searcher.search import SolrBackend

    crawl_id = "pages"
    d = [*defines(tmp_path, "sqlite"), "-crawlId", crawl_id]
    urls = [f"http://h{h}.example/p{i}" for h in range(3) for i in range(h + 1)]
    assert cli("inject", seed_file(tmp_path, *urls), *d) == 0
    assert cli("updatehostdb", *d) == 0
    solr = SolrBackend(SolrClient("http://127.0.0.1:9/solr/none", 5))  # the page asks no index
    app = create_app(conf_for(tmp_path, "sqlite"), crawl_id, solr)
    with serving(app) as base:
        url = f"{base}/hosts"
        page = requests.get(url, timeout=30)
        assert page.status_code == 200 and "<script" not in page.text
        order = [page.text.index(f"<tr><th>h{h}.example</th><td>{h + 1}</td><td>{h + 1}</td>") for h in range(3)]
        assert order == sorted(order, reverse=True)  # most URLs first
        page = requests.get(url, params={"expr": "numRecords >= 2 and '<b>' != host", "sort": "host"}, timeout=30)
        assert page.status_code == 200 and "h0.example" not in page.text
        assert page.text.index("h1.example") < page.text.index("h2.example")
        assert "&#39;&lt;b&gt;&#39;" in page.text and "'<b>'" not in page.text  # the expression echoed, escaped
        for params in ({"expr": "__import__('os')"}, {"sort": "<x>"}, {"expr": "!" * 8000 + "1"},
                       {"expr": "1+" * 5000 + "1"}):
            bad = requests.get(url, params=params, timeout=30)
            assert bad.status_code == 400 and bad.text.count('role="alert"') == 1 and "<x>" not in bad.text


def test_failures_after_an_answer_are_not_connection_failures() -> None:
    """connectionFailures counts rows whose fetch got no HTTP answer; a response the client could not read or a
    body that did not decode came from a server that answered (a host is not skipped for broken compression)."""
    from nutch2.crawldb.hostdb import HostDatum
    from nutch2.status import CrawlStatus, ProtocolStatusCode
    from nutch2.webpage import ProtocolStatus, WebPage

    datum = HostDatum()
    for reason in ("connection refused", "timeout (read)", "connection reset", "bad response: more than 100 headers",
                   "content decoding error (br): Decompression error: _ERROR_FORMAT_PADDING_1",
                   "fetcher error: boom", "unknown host"):
        page = WebPage(f"example.com:http/{len(reason)}", status=CrawlStatus.RETRY,
                       protocol_status=ProtocolStatus(ProtocolStatusCode.EXCEPTION, [reason]))
        datum.add(page)
    assert (datum.connectionFailures, datum.dnsFailures, datum.numFailures) == (3, 1, 4)
