"""The `nutch2` console script, run as a new user would: separate processes for inject and readdb."""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nutch2.stores import crawl_lock, crawler_lease, open_store
from tests.conftest import make_conf

_SCRIPT = Path(sys.executable).parent / "nutch2"
# the installed console script when there is one, else the same entry point through the interpreter
NUTCH2 = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-c",
                                                     "import sys; from nutch2.cli import main; sys.exit(main())"]
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

SEEDS = """\
# my seeds
http://example.com/
https://www.example.org/news/\tnutch.score=2.5\tcategory=news

http://example.com/about.html\tnutch.fetchInterval=86400
not a url
http://bad.example.com/\tnutch.score=abc
ftp://files.example.com/pub/
http://example.com/logo.png
http://www.example.net/
"""
GOOD = ["http://example.com/", "https://www.example.org/news/", "http://example.com/about.html",
        "http://www.example.net/"]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("NUTCH_CONF_DIR", None)
    return env


def run(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NUTCH2, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env())


def run_all(cwd: Path, *commands: list[str], timeout: float = 60) -> list[subprocess.CompletedProcess[str]]:
    """Run several independent commands at once (each start-up costs a few hundred ms of imports)."""
    procs = [(c, subprocess.Popen([*NUTCH2, *c], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=_env())) for c in commands]
    done = []
    for c, proc in procs:
        out, err = proc.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess([*NUTCH2, *c], proc.returncode, out, err))
    return done


def one_error_line(p: subprocess.CompletedProcess[str]) -> str:
    """The process failed with exactly one line on stderr and no traceback."""
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A folder where `nutch2 inject seeds.txt` ran once into ./crawl (sqlite, the default store)."""
    d = tmp_path_factory.mktemp("cli")
    (d / "seeds.txt").write_text(SEEDS, encoding="utf-8")
    p = run(d, "inject", "seeds.txt", "-D", "http.agent.name=test")
    return d, p


def read_dump(folder: Path) -> list[dict]:
    rows = []
    for f in sorted(folder.glob("*.jsonl")):
        rows.extend(json.loads(line) for line in f.read_text(encoding="utf-8").splitlines())
    return rows


# ------------------------------------------------------------------ inject, then read from other processes


def test_inject_reports_bad_lines_and_summary(crawl) -> None:
    d, p = crawl
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert (d / "crawl" / "webpage.sqlite").is_file()
    # one summary line per job, on stderr (stdout is for results only)
    summary = r"^inject: finished in [\d.]+ s: filtered=2 injected=4 known=0 rejected=2$"
    assert re.search(summary, p.stderr, re.M), p.stderr
    assert p.stdout == "", p.stdout
    assert "seeds.txt:6: " in p.stderr and "not a url" in p.stderr
    assert "seeds.txt:7: " in p.stderr and "nutch.score" in p.stderr


def test_dump_from_another_process(results) -> None:
    rows = read_dump(results["dump_all"].dir)
    by_url = {r["url"]: r for r in rows}
    assert sorted(by_url) == sorted(GOOD)
    now = datetime.now(UTC)
    for r in rows:
        assert r["status"] == "INJECTED"
        assert ISO_Z.match(r["fetchTime"]), r["fetchTime"]
        t = datetime.strptime(r["fetchTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs((now - t).total_seconds()) < 300
        assert r["prevFetchTime"] is None
        assert r["markers"] == {"_injmrk_": "y", "dist": "0"}
        assert r["protocolStatus"]["code"] == 0 and isinstance(r["protocolStatus"]["name"], str)
        assert r["protocolStatus"]["args"] == []
        ps = r["parseStatus"]
        assert set(ps) >= {"majorCode", "minorCode", "name", "args"}
        assert ps["majorCode"] == 0 and ps["args"] == []
        assert r["retriesSinceFetch"] == 0
        assert r["baseUrl"] == r["url"]
        assert r["outlinks"] == {} and r["inlinks"] == {} and r["headers"] == {}
        assert r["sitemaps"] == {} and r["stmPriority"] == 0.0  # every field readdb -url shows
        assert "text" not in r and "content" not in r
        for v in r["metadata"].values():
            base64.b64decode(v, validate=True)
    news = by_url["https://www.example.org/news/"]
    assert news["key"] == "org.example.www:https/news/"
    assert news["score"] == 2.5
    assert base64.b64decode(news["metadata"]["category"]) == b"news"
    assert by_url["http://example.com/about.html"]["fetchInterval"] == 86400
    assert by_url["http://example.com/"]["fetchInterval"] == 2592000
    assert by_url["http://example.com/"]["score"] == 1.0


def test_dump_text_and_content_only_when_asked(results) -> None:
    rows = read_dump(results["dump_tc"].dir)
    assert rows and all("text" in r and "content" in r for r in rows)


def test_dump_filters(results) -> None:
    assert sorted(r["url"] for r in read_dump(results["dump_re"].dir)) == [
        "http://example.com/", "http://example.com/about.html"]
    assert len(read_dump(results["dump_st"].dir)) == 4
    assert read_dump(results["dump_st2"].dir) == []
    assert [r["url"] for r in read_dump(results["dump_both"].dir)] == ["https://www.example.org/news/"]


def test_stats_from_another_process(results) -> None:
    p = results["stats"]
    assert p.returncode == 0, p.stderr
    assert re.search(r"^TOTAL urls:\s+4$", p.stdout, re.M), p.stdout
    assert re.search(r"^status 0 \(INJECTED\):\s+4$", p.stdout, re.M), p.stdout
    assert re.search(r"^retry 0:\s+4$", p.stdout, re.M)
    assert re.search(r"^min score:\s+1\.000$", p.stdout, re.M)
    assert re.search(r"^max score:\s+2\.500$", p.stdout, re.M)
    p = results["stats_sort"]
    assert p.returncode == 0, p.stderr
    assert re.search(r"example\.com:\s+2$", p.stdout, re.M), p.stdout
    heading = p.stdout.index("hosts (URLs per host, all statuses):")  # the hosts follow the statuses, headed
    assert heading > p.stdout.rindex("status ") and p.stdout.index("example.com:") > heading


def test_readdb_url(results) -> None:
    p = results["url"]
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "url:\thttps://www.example.org/news/" in lines and "status:\t0 (INJECTED)" in lines
    assert "score:\t2.5" in lines and "fetchInterval:\t2592000 s (30 days)" in lines
    assert "marker inject (_injmrk_):\ty" in lines and "marker distance (dist):\t0" in lines
    assert "metadata category:\tnews" in lines and "metadata cash (_csh_):\t2.5" in lines  # text, OPIC's cash
    assert all(re.fullmatch(r"[A-Za-z][\w ()]*:\t\S.*", line) for line in lines), lines  # one `name: value` a line
    assert not re.search(r"b'|\{'|None|<\w+\.|[A-Za-z0-9+/]{8,}=", p.stdout), p.stdout  # no repr, no base64
    p = results["url_missing"]
    assert p.returncode != 0
    assert "not-injected.example.com" in p.stderr and "Traceback" not in p.stderr


def test_readdb_url_shows_binary_values_in_hex_and_bookkeeping_readably(tmp_path: Path) -> None:
    from nutch2.crawldb.rowjson import METADATA_LABELS
    from nutch2.rowkeys import (
        RESERVED_METADATA,
    )
    from nutch2.stores import open_store
    from nutch2.webpage import ParseStatus, ProtocolStatus, WebPage

    assert set(METADATA_LABELS) == set(RESERVED_METADATA)  # readdb names every key the project keeps
    page = WebPage("com.example:http/a", status=0x22, score=0.25, fetch_time=1_700_000_000_000,
                   title="Two\nlines", signature=bytes.fromhex("00ff10"), protocol_status=ProtocolStatus(16, ["boom"]),
                   parse_status=ParseStatus(2, 200, ["bad"]), headers={"X-A": "1"},
                   outlinks={"http://example.com/b": "to b"}, markers={"_gnmrk_": "B1"},
                   metadata={"_csh_": b"0.125", "_ftclaim_": b"B1/run7/2", "_trunc_": b"y", "bin": b"\x00\xff\x10",
                             "lang": "fran\u00e7ais".encode()})
    with open_store(make_conf(tmp_path, "sqlite"), "bin") as store:
        store.put(page.key, page)
    p = run(tmp_path, "readdb", "-url", "http://example.com/a", "-crawlId", "bin",
            "-D", f"storage.data.dir={tmp_path / 'crawl'}")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    for line in ("status:\t34 (RETRY)", "fetchTime:\t2023-11-14T22:13:20Z", "title:\tTwo\\nlines",
                 "signature:\t00ff10", "protocolStatus:\t16 (EXCEPTION), args boom",
                 "parseStatus:\t2/200 (FAILED/EXCEPTION), args bad", "marker generate (_gnmrk_):\tB1",
                 "metadata cash (_csh_):\t0.125", "metadata fetch claim (_ftclaim_):\tbatch B1, run run7, claim 2",
                 "metadata truncated (_trunc_):\tyes", "metadata bin:\t0x00ff10", "metadata lang:\tfran\u00e7ais",
                 "outlink:\thttp://example.com/b\tto b", "header:\tX-A\t1"):
        assert line in lines, (line, lines)


def test_reinject_counts_known(crawl, tmp_path: Path) -> None:
    d, _ = crawl
    (tmp_path / "again.txt").write_text("http://example.com/\n")
    p = run(d, "inject", str(tmp_path / "again.txt"), "-crawlId", "again")
    assert p.returncode == 0 and " injected=1 " in p.stderr
    p = run(d, "inject", str(tmp_path / "again.txt"), "-crawlId", "again")
    assert p.returncode == 0 and " injected=0 known=1 " in p.stderr, p.stderr
    assert (d / "crawl" / "again_webpage.sqlite").is_file()


# ------------------------------------------------------------------ one-line results

# name -> command line; all run at once in the crawl's folder (see `results`), each test checks its own result
CASES: dict[str, list[str]] = {
    # reads of the crawl injected by the `crawl` fixture
    "dump_all": ["readdb", "-dump", "dump-all"],
    "dump_tc": ["readdb", "-dump", "dump-tc", "-text", "-content"],
    "dump_re": ["readdb", "-dump", "dump-re", "-regex", r"example\.com/"],
    "dump_st": ["readdb", "-dump", "dump-st", "-status", "injected"],
    "dump_st2": ["readdb", "-dump", "dump-st2", "-status", "FETCHED"],
    "dump_both": ["readdb", "-dump", "dump-both", "-status", "INJECTED", "-regex", "^https://"],
    "stats": ["readdb", "-stats"],
    "stats_sort": ["readdb", "-stats", "-sort"],
    "url": ["readdb", "-url", "https://www.example.org/news/"],
    "url_missing": ["readdb", "-url", "http://not-injected.example.com/"],
    # results a user can cause
    "wrong_store": ["inject", "s.txt", "-D", "storage.data.store.class=foo", "-crawlId", "e1"],
    "not_yet": ["inject", "s.txt", "-D", "storage.data.store.class=cassandra", "-D", "storage.cassandra.port=9",
                "-crawlId", "e2"],
    "no_seed": ["inject", "no/such/seeds.txt", "-crawlId", "e3"],
    "empty_folder": ["inject", "urls", "-crawlId", "e4"],
    "nothing_injected": ["inject", "bad.txt", "-crawlId", "e5"],
    "missing_arg": ["inject"],
    "readdb_no_mode": ["readdb"],
    "unknown_command": ["injekt", "s.txt"],
    "define_no_equals": ["inject", "s.txt", "-D", "fetcher.threads.fetch", "-crawlId", "e6"],
    "define_wrong_type": ["inject", "s.txt", "-D", "fetcher.threads.fetch=abc", "-crawlId", "e7"],
    "conf_missing": ["readdb", "-stats", "--conf", "nope"],
    "site_toml_wrong_type": ["readdb", "-stats", "--conf", "badconf"],
    "unknown_crawl_id": ["readdb", "-stats", "-crawlId", "never"],
    "dump_non_empty": ["readdb", "-dump", "full"],
    "dump_bad_status": ["readdb", "-dump", "bad-status", "-status", "bogus"],
    "dump_bad_regex": ["readdb", "-dump", "bad-regex", "-regex", "("],
    "help": ["--help"],
    "inject_help": ["inject", "--help"],
    "readdb_help": ["readdb", "--help"],
}


@pytest.fixture(scope="module")
def results(crawl) -> dict[str, subprocess.CompletedProcess[str]]:
    d, _ = crawl
    (d / "s.txt").write_text("http://a.com/\n")
    (d / "bad.txt").write_text("# only a comment\nnot a url\n")
    (d / "urls").mkdir()
    (d / "badconf").mkdir()
    (d / "badconf" / "nutch-site.toml").write_text('"storage.write.batch.size" = "lots"\n')
    (d / "full").mkdir()
    (d / "full" / "keep.txt").write_text("x")
    done = dict(zip(CASES, run_all(d, *CASES.values()), strict=True))
    for name, p in done.items():
        if name.startswith("dump_") and not name.startswith("dump_bad") and name != "dump_non_empty":
            assert p.returncode == 0, (name, p.stderr)
            p.dir = d / CASES[name][2]  # type: ignore[attr-defined]
    return done


def test_wrong_store_name(results) -> None:
    line = one_error_line(results["wrong_store"])
    assert "'foo'" in line and "sqlite" in line and "memory" in line


def test_service_store_down(results) -> None:
    line = one_error_line(results["not_yet"])
    assert "Cassandra" in line and "127.0.0.1:9" in line and "storage.cassandra.port" in line


def test_nonexistent_seed_path(crawl, results) -> None:
    line = one_error_line(results["no_seed"])
    assert "no/such/seeds.txt" in line
    d, _ = crawl
    assert not (d / "crawl" / "e3_webpage.sqlite").exists()  # nothing half-written


def test_unreadable_seed_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root reads any mode-000 file; /proc/self/mem opens but fails to read (EIO)
        seeds = tmp_path / "s.txt"
        seeds.symlink_to("/proc/self/mem")
    else:
        seeds = tmp_path / "s.txt"
        seeds.write_text("http://a.com/\n")
        seeds.chmod(0)
    line = one_error_line(run(tmp_path, "inject", "s.txt"))
    assert "s.txt" in line and "cannot read" in line


def test_seed_path_is_a_folder_of_nothing(results) -> None:
    assert "urls" in one_error_line(results["empty_folder"])


def test_no_url_injected_is_an_error(results) -> None:
    p = results["nothing_injected"]
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "bad.txt:2: " in p.stderr
    assert "no URL was injected" in p.stderr


def test_missing_argument_exits_2(results) -> None:
    p = results["missing_arg"]
    line = one_error_line(p)
    assert p.returncode == 2
    assert "seeds" in line


def test_readdb_without_mode_exits_2(results) -> None:
    p = results["readdb_no_mode"]
    one_error_line(p)
    assert p.returncode == 2


def test_unknown_command_exits_2(results) -> None:
    p = results["unknown_command"]
    one_error_line(p)
    assert p.returncode == 2


def test_define_without_equals(results) -> None:
    line = one_error_line(results["define_no_equals"])
    assert "fetcher.threads.fetch" in line and "key=value" in line


def test_define_wrong_type(results) -> None:
    line = one_error_line(results["define_wrong_type"])
    assert "fetcher.threads.fetch" in line and "'abc'" in line


def test_site_toml_wrong_type(results) -> None:
    line = one_error_line(results["site_toml_wrong_type"])
    assert "storage.write.batch.size" in line and "nutch-site.toml" in line


def test_conf_dir_missing(results) -> None:
    line = one_error_line(results["conf_missing"])
    assert "nope" in line and "--conf" in line


def test_readdb_unknown_crawl_id(crawl, results) -> None:
    d, _ = crawl
    line = one_error_line(results["unknown_crawl_id"])
    assert "never_webpage" in line and "inject" in line
    assert not (d / "crawl" / "never_webpage.sqlite").exists()


def test_dump_into_non_empty_folder(crawl, results) -> None:
    d, _ = crawl
    line = one_error_line(results["dump_non_empty"])
    assert "full" in line and "not empty" in line
    assert sorted(p.name for p in (d / "full").iterdir()) == ["keep.txt"]


def test_dump_bad_status_and_regex(results) -> None:
    line = one_error_line(results["dump_bad_status"])
    assert "bogus" in line and "FETCHED" in line
    assert "-regex" in one_error_line(results["dump_bad_regex"])


def test_dump_bad_filter_leaves_no_folder(crawl, results) -> None:
    d, _ = crawl
    assert results["dump_bad_status"].returncode != 0
    assert not (d / "bad-status").exists()


def test_help(results) -> None:
    top, inj, rdb = results["help"], results["inject_help"], results["readdb_help"]
    assert top.returncode == 0
    assert "inject" in top.stdout and "readdb" in top.stdout
    assert inj.returncode == 0
    assert "-crawlId" in inj.stdout and "-overwrite" in inj.stdout and "-update" in inj.stdout and "-D" in inj.stdout
    assert rdb.returncode == 0 and "-dump" in rdb.stdout and "-stats" in rdb.stdout


def test_python_m_nutch2_cli(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "nutch2.cli", "--help"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "inject" in p.stdout and "readdb" in p.stdout


def test_a_command_that_leaves_rows_in_the_memory_store_says_they_end_with_it(
        crawl, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, _ = crawl
    mem = ["-D", "storage.data.store.class=memory", "-D", f"storage.data.dir={tmp_path / 'crawl'}"]
    p = run(d, "inject", "seeds.txt", "-crawlId", "m", *mem)
    assert p.returncode == 0, p.stderr
    warned = [x for x in p.stderr.splitlines() if "warning" in x]
    assert warned == ["nutch2 inject: warning: storage.data.store.class=memory keeps rows only within one process: "
                      "the 4 rows of this crawl are gone once this command ends; use sqlite (the default) for a "
                      "crawl that lasts (or run every step in one `nutch2 crawl`)"], p.stderr
    p = run(d, "readdb", "-stats", "-crawlId", "m", *mem)  # they are gone; a command that leaves none says nothing
    assert p.returncode == 0 and re.search(r"^TOTAL urls:\s+0$", p.stdout, re.M) and "warning" not in p.stderr
    from tests.crawlutil import cli  # in one process (tests, the job API) the rows stay: no warning

    capsys.readouterr()
    assert cli("inject", str(d / "seeds.txt"), "-crawlId", "m2", *mem) == 0
    assert "warning" not in capsys.readouterr().err


# ------------------------------------------------------------------ processes sharing one crawl


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "sqlite")
    (tmp_path / "s.txt").write_text("http://a.com/\n")
    lock = crawl_lock(conf, "x", "test", create=True)
    try:
        p = run(tmp_path, "inject", "s.txt", "-crawlId", "x", "-D", f"storage.data.dir={tmp_path / 'crawl'}",
                timeout=20)
        line = one_error_line(p)
        assert "holds its lease" in line and f"pid {os.getpid()}" in line
    finally:
        lock.release()
    # another crawl id is not blocked, and once released x works too
    p = run(tmp_path, "inject", "s.txt", "-crawlId", "x", "-D", f"storage.data.dir={tmp_path / 'crawl'}")
    assert p.returncode == 0, p.stderr


def test_a_second_crawl_of_a_running_crawl_stops_before_it_injects(tmp_path: Path) -> None:
    """A crawl command holds the crawl command's lease for the whole crawl: a second one of the same crawl id says
    so in one line and injects nothing (its steps' own leases come and go between them)."""
    conf = make_conf(tmp_path, "sqlite")
    (tmp_path / "s.txt").write_text("http://127.0.0.1:9/a\n")
    data = ["-D", f"storage.data.dir={tmp_path / 'crawl'}", "-D", "http.agent.name=T"]
    running = crawler_lease(conf, "y", create=True)
    try:
        p = run(tmp_path, "crawl", "s.txt", "-crawlId", "y", "-rounds", "1", *data, timeout=30)
        line = one_error_line(p)
        assert "another crawl of this crawl id" in line and f"pid {os.getpid()}" in line, line
    finally:
        running.release()
    with open_store(conf, "y") as store:
        assert store.count() == 0  # nothing injected
    crawler_lease(conf, "y").release()  # let go: the next crawl takes it


def test_reader_while_writer_holds_transaction(crawl, tmp_path: Path) -> None:
    """A second process reads (WAL) while this one holds an open write transaction with uncommitted rows."""
    d, _ = crawl
    (tmp_path / "s.txt").write_text("http://a.com/\nhttp://b.com/\n")
    data = tmp_path / "crawl"
    p = run(tmp_path, "inject", "s.txt", "-crawlId", "w", "-D", f"storage.data.dir={data}")
    assert p.returncode == 0, p.stderr
    conn = sqlite3.connect(data / "w_webpage.sqlite", isolation_level=None)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute("BEGIN IMMEDIATE")
        conn.execute('INSERT INTO "w_webpage" (key, status) VALUES (?, ?)', ("com.c:http/", 0))
        conn.execute('UPDATE "w_webpage" SET score = 5.0')
        common = ["-crawlId", "w", "-D", f"storage.data.dir={data}"]
        p, q = run_all(tmp_path, ["readdb", "-stats", *common], ["readdb", "-dump", "out", *common], timeout=20)
        assert p.returncode == 0, p.stderr
        assert re.search(r"^TOTAL urls:\s+2$", p.stdout, re.M), p.stdout  # the committed state
        assert re.search(r"^max score:\s+1\.000$", p.stdout, re.M), p.stdout
        assert q.returncode == 0, q.stderr
        assert sorted(r["url"] for r in read_dump(tmp_path / "out")) == ["http://a.com/", "http://b.com/"]
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    p = run(tmp_path, "readdb", "-stats", "-crawlId", "w", "-D", f"storage.data.dir={data}")
    assert re.search(r"^TOTAL urls:\s+3$", p.stdout, re.M), p.stdout


def test_nutch_and_hadoop_spellings_of_help_and_defines(tmp_path: Path) -> None:
    """`-help` is --help (Nutch's commands take one dash), `-Dkey=value` is `-D key=value` (Hadoop's); a -D
    without key=value and a bare `nutch2` are bad usage: exit 2, said on stderr."""
    helped = run_all(tmp_path, ["fetch", "-help"], ["warc", "-help"], ["parsechecker", "-help"])
    for p in helped:
        assert p.returncode == 0 and p.stdout.startswith("usage: nutch2 ") and not p.stderr, p.stderr
    stats = run(tmp_path, "readdb", "-stats", "-crawlId", "nope", f"-Dstorage.data.dir={tmp_path / 'elsewhere'}")
    assert str(tmp_path / "elsewhere") in one_error_line(stats)  # the define took effect: the db it looked for
    for bad in ("fetcher.server.delay", "=1"):
        p = run(tmp_path, "readdb", "-stats", "-D", bad)
        assert p.returncode == 2 and "expected key=value" in one_error_line(p)
    bare = run(tmp_path)
    assert bare.returncode == 2 and not bare.stdout and bare.stderr.startswith("usage: nutch2")
    typo = run(tmp_path, "fecth")
    assert typo.returncode == 2 and "no command 'fecth'; did you mean 'fetch'?" in one_error_line(typo)
    depth = run(tmp_path, "crawl", "seeds/", "-depth", "2")  # a Nutch user's habits
    assert depth.returncode == 2 and "; Nutch 1's -depth N is -rounds N here" in one_error_line(depth)
    gone = run(tmp_path, "index", "-all", "-deleteGone")
    assert gone.returncode == 2 and "Nutch 1's -deleteGone is `nutch2 clean` here" in one_error_line(gone)
    order = run(tmp_path, "crawl", "seeds/", "news", "3")
    assert order.returncode == 2 and ("Nutch 2's bin/crawl <seedDir> <crawlId> <rounds> is: -crawlId news -rounds 3"
                                      in one_error_line(order))
    scrapy = run(tmp_path, "crawl", "seeds/", "-s", "DOWNLOAD_DELAY=2")  # a Scrapy user's habit
    assert scrapy.returncode == 2 and "Scrapy's -s NAME=VALUE is -D property=value here" in one_error_line(scrapy)


def test_a_crawl_with_no_parser_plugin_fails_before_it_makes_anything(tmp_path: Path) -> None:
    """A typo in plugin.includes that leaves no parser (parse-htm) would fetch pages that are never parsed, their
    links never followed: the crawl refuses in one line before it creates the crawl db or injects."""
    (tmp_path / "s.txt").write_text("http://127.0.0.1:9/\n")
    p = run(tmp_path, "crawl", "s.txt", "-crawlId", "np", "-rounds", "1", "-D", "http.agent.name=T",
            "-D", "plugin.includes=protocol-http|parse-htm|urlfilter-regex", "-D",
            f"storage.data.dir={tmp_path / 'crawl'}")
    error = [line for line in p.stderr.splitlines() if not line.startswith("warning:")]
    assert p.returncode == 1 and len(error) == 1 and "no parser plugin is active" in error[0], p.stderr
    assert "parse-html" in error[0] and not (tmp_path / "crawl" / "np_webpage.sqlite").exists()


def test_an_empty_crawl_db_file_is_no_crawl_db(tmp_path: Path) -> None:
    """A crawl db cut to 0 bytes (or touched): readdb and generate say there is no crawl db, and leave nothing
    in the file (no journal of a generate that never ran)."""
    data = tmp_path / "crawl"
    data.mkdir()
    (data / "z_webpage.sqlite").write_bytes(b"")
    for args in (("readdb", "-stats"), ("generate",), ("fetch", "-all", "-resume")):
        p = run(tmp_path, *args, "-crawlId", "z", "-D", f"storage.data.dir={data}", "-D", "http.agent.name=T")
        line = one_error_line(p)
        assert p.returncode == 1 and "holds no table z_webpage" in line and "nutch2 inject" in line, line
    assert (data / "z_webpage.sqlite").stat().st_size == 0


def test_a_read_only_crawl_folder_is_named_as_the_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from stores import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store.os, "access", lambda path, mode: False)  # as a read-only file system answers
    error = sqlite3.OperationalError("unable to open database file")
    text = sqlite_store._describe(tmp_path / "r_webpage.sqlite", error)
    assert "its folder is not writable" in text and "copy the crawl to a writable folder" in text


def test_conf_files_in_another_encoding_are_one_line(tmp_path: Path) -> None:
    """nutch-site.toml in Latin-1 names the file and asks for UTF-8; with a byte order mark it is read; a Latin-1
    regex-urlfilter.txt names its file too."""
    conf = tmp_path / "conf"
    conf.mkdir()
    site = conf / "nutch-site.toml"
    d = ["--conf", str(conf), "-D", f"storage.data.dir={tmp_path / 'crawl'}"]
    site.write_bytes('"http.agent.name" = "Caf\u00e9Bot"\n'.encode("latin-1"))
    line = one_error_line(run(tmp_path, "readdb", "-stats", *d))
    assert str(site) in line and "not UTF-8" in line and "save the file as UTF-8" in line
    site.write_bytes(b"\xef\xbb\xbf" + '"http.agent.name" = "Caf\u00e9Bot"\n'.encode())
    p = run(tmp_path, "readdb", "-stats", *d)
    assert "no crawl db" in one_error_line(p)  # the conf was read: the missing crawl is what stops it
    site.write_text('"urlfilter.regex.file" = "my-filter.txt"\n', encoding="utf-8")
    (conf / "my-filter.txt").write_bytes("+^http://caf\u00e9/\n".encode("latin-1"))
    line = one_error_line(run(tmp_path, "filterchecker", "http://example.com/", *d))
    assert "my-filter.txt" in line and "not UTF-8" in line, line


def test_a_seed_path_that_is_not_a_file_says_so(tmp_path: Path) -> None:
    p = run(tmp_path, "inject", "/dev/null", "-crawlId", "dn", "-D", f"storage.data.dir={tmp_path / 'crawl'}")
    line = one_error_line(p)
    assert "seed path /dev/null is not a regular file or a folder" in line and "does not exist" not in line


def test_a_mistyped_flag_names_the_flag_it_resembles(capsys: pytest.CaptureFixture[str]) -> None:
    from nutch2.cli import main

    for argv, hint in ((["fetch", "B", "-thread", "20"], "; did you mean -threads?"),
                       (["generate", "-topn", "5"], "; did you mean -topN?"),
                       (["readdb", "-zzz"], " (see nutch2 readdb --help)")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"nutch2 {argv[0]}: error: unrecognized arguments: ") and hint in err, err
        assert "did you mean" not in err or argv[0] != "readdb", err


def test_a_url_given_to_inject_for_a_seed_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nutch2.cli import main

    assert main(["inject", "https://example.com/a", "-crawlId", "u", "-D", f"storage.data.dir={tmp_path}"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("nutch2 inject: error: https://example.com/a is a URL, and inject reads seed files: put it in one "
                   "(echo 'https://example.com/a' > seeds/seeds.txt) and give the file or its folder"), err
    assert not list(tmp_path.glob("*.sqlite"))  # no crawl made


def test_nutch2s_default_store_copied_from_nutch_is_said_to_be_postgresql(tmp_path: Path) -> None:
    """Nutch 2's nutch-default.xml, copied as a nutch-site.xml, names Gora's SqlStore: here PostgreSQL, which the
    user never chose. The command went to storage.postgres.url (a server of this machine, if one ran there) or
    failed with 'cannot reach PostgreSQL ... start it', naming nothing of the user's own file."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "nutch-site.xml").write_text(
        "<configuration><property><name>storage.data.store.class</name>"
        "<value>org.apache.gora.sql.store.SqlStore</value></property></configuration>")
    p = run(tmp_path, "readdb", "-stats", "-D", "storage.postgres.url=postgresql://x@127.0.0.1:1/x")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    warning, error = p.stderr.splitlines()
    assert "org.apache.gora.sql.store.SqlStore" in warning and "PostgreSQL" in warning and "sqlite" in warning
    assert "cannot reach PostgreSQL" in error
    p = run(tmp_path, "readdb", "-stats", "-D", "storage.data.store.class=postgres",
            "-D", "storage.postgres.url=postgresql://x@127.0.0.1:1/x")
    assert len(p.stderr.splitlines()) == 1, p.stderr  # chosen by its name: nothing to warn about
