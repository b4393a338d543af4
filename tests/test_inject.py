"""InjectorJob at job level, on every store backend: seed parsing, counters, row contents, re-inject modes."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nutch2.errors import NutchError
from nutch2.jobs.inject import InjectorJob, parse_seed, seed_splits
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters
from nutch2.marks import Mark, get_distance
from nutch2.plugins.scoring_opic.opic import get_cash
from nutch2.stores import open_store
from nutch2.stores.base import DataStore
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import JOB_BACKENDS, make_conf

DAY_MS = 24 * 3600 * 1000


@pytest.fixture(params=JOB_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def env(backend: str, tmp_path: Path) -> Iterator[tuple]:
    conf = make_conf(tmp_path, backend)
    store = open_store(conf, "inj" + uuid.uuid4().hex[:10])
    yield conf, store
    store.drop_schema()
    store.close()


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    p.write_bytes(data)
    return p


def inject(conf, store: DataStore, seeds: Path, **kw) -> Counters:
    return make_runner(conf, 1).run(InjectorJob(conf, seeds, **kw), store)


def row(store: DataStore, url: str) -> WebPage:
    page = store.get(reverse_url(url))
    assert page is not None, url
    return page


def urls(store: DataStore) -> list[str]:
    return sorted(p.base_url for p in store.scan(fields=("base_url",)))


# ------------------------------------------------------------------ parsing one line


@pytest.mark.parametrize("text", ["", "   ", "\t", "# a comment", "  # indented comment"])
def test_parse_seed_skips(text: str) -> None:
    assert parse_seed(text) is None


def test_parse_seed_metadata() -> None:
    assert parse_seed("http://a.com/\tnutch.score=2\t\tk=v=w") == ("http://a.com/", {"nutch.score": "2", "k": "v=w"})


# ------------------------------------------------------------------ new rows


def test_new_rows(env, tmp_path: Path) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", "# seeds\n\nhttp://example.com/\n   \nhttps://www.example.org/a/b?x=1\n"
                                         "HTTP://Example.COM:80/c#frag\n")
    before = int(time.time() * 1000)
    c = inject(conf, store, seeds)
    after = int(time.time() * 1000)
    assert (c.get("injected"), c.get("rejected"), c.get("filtered"), c.get("known")) == (3, 0, 0, 0)
    assert urls(store) == ["http://example.com/", "http://example.com/c", "https://www.example.org/a/b?x=1"]
    for url in ["http://example.com/", "http://example.com/c", "https://www.example.org/a/b?x=1"]:
        page = row(store, url)
        assert page.status == 0
        assert before <= page.fetch_time <= after
        assert page.fetch_interval == 2592000
        assert page.score == 1.0
        assert get_cash(page) == 1.0
        assert page.markers == {"dist": "0", "_injmrk_": "y"}
        assert get_distance(page) == 0
        assert Mark.INJECT.check(page) == "y"
        assert page.retries_since_fetch == 0
    assert store.count(("_injmrk_", "y")) == 3


def test_injected_score_and_interval_from_conf(backend: str, tmp_path: Path) -> None:
    conf = make_conf(tmp_path, backend, **{"db.score.injected": 0.25, "db.fetch.interval.default": 3600})
    store = open_store(conf, "inj" + uuid.uuid4().hex[:10])
    try:
        inject(conf, store, write(tmp_path, "s.txt", "http://a.com/\n"))
        page = row(store, "http://a.com/")
        assert page.score == 0.25 and page.fetch_interval == 3600
    finally:
        store.drop_schema()
        store.close()


def test_tab_separated_metadata(env, tmp_path: Path) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt",
                  "http://a.com/\tnutch.score=2.5\tnutch.fetchInterval=86400\tcategory=news\tlang=fr\n"
                  "http://b.com/\tnutch.score=-1\n"
                  "http://c.com/\tnote=caf\u00e9 \u00e0 la cr\u00e8me\n")
    c = inject(conf, store, seeds)
    assert c.get("injected") == 3 and c.get("rejected") == 0
    a = row(store, "http://a.com/")
    assert a.score == 2.5 and get_cash(a) == 2.5
    assert a.fetch_interval == 86400
    assert a.metadata["category"] == b"news"
    assert a.metadata["lang"] == b"fr"
    assert "nutch.score" not in a.metadata and "nutch.fetchInterval" not in a.metadata
    assert row(store, "http://b.com/").score == -1.0
    assert row(store, "http://c.com/").metadata["note"] == "caf\u00e9 \u00e0 la cr\u00e8me".encode()


def test_malformed_lines_are_reported_and_skipped(env, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf, store = env
    lines = [
        "http://good1.com/",             # 1
        "http://a b.com/",               # 2 whitespace in the URL
        "http://good2.com/\tjustakey",   # 3 metadata without '='
        "http://c.com/\tnutch.score=abc",  # 4
        "not a url",                     # 5
        "http://d.com/\tnutch.fetchInterval=1.5",  # 6
        "notaurl",                       # 7
        "http://",                       # 8
        "http://e.com/\t=v",             # 9 empty key
        "http://f.com/\tnutch.score=nan",  # 10
        "http://[::1/",                  # 11 broken IPv6 literal
        "http://good3.com/",             # 12
    ]
    data = ("\n".join(lines) + "\n").encode() + b"\x00\x01\xff\xfe\x80garbage\n" + b"http://good4.com/\n"
    seeds = write(tmp_path, "seeds.txt", data)
    c = inject(conf, store, seeds)
    assert c.get("injected") == 3
    assert c.get("rejected") == 11
    assert urls(store) == ["http://good1.com/", "http://good3.com/", "http://good4.com/"]
    err = capsys.readouterr().err
    reported = [ln for ln in err.splitlines() if ln.startswith(f"{seeds}:")]
    numbers = sorted(int(ln[len(str(seeds)) + 1:].split(":", 1)[0]) for ln in reported)
    assert numbers == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13]
    by_line = {int(ln[len(str(seeds)) + 1:].split(":", 1)[0]): ln for ln in reported}
    assert "whitespace" in by_line[2]
    assert "justakey" in by_line[3] and "key=value" in by_line[3]
    assert "nutch.score" in by_line[4]
    assert "nutch.fetchInterval" in by_line[6]
    assert "URL" in by_line[11] and "::1" in by_line[11]
    for ln in reported:
        assert ln.endswith("line skipped")
    assert "Traceback" not in err


def test_good_and_bad_lines_exact_rows(env, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", "http://good1.com/\nhttp://x y/\nhttp://good2.com/\tk\nhttp://good3.com/\n")
    c = inject(conf, store, seeds)
    assert (c.get("injected"), c.get("rejected")) == (2, 2)
    assert urls(store) == ["http://good1.com/", "http://good3.com/"]
    err = capsys.readouterr().err
    assert f"{seeds}:2: " in err and f"{seeds}:3: " in err


def test_filtered_urls_are_counted(env, tmp_path: Path) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", "ftp://ftp.example.com/pub/\nhttp://example.com/photo.JPG\n"
                                         "http://example.com/a.css?v=1\nfile:///etc/passwd\n"
                                         f"http://example.com/{'x' * 2100}\nhttp://example.com/ok.html\n")
    c = inject(conf, store, seeds)
    assert c.get("filtered") == 5
    assert c.get("injected") == 1
    assert urls(store) == ["http://example.com/ok.html"]


def test_crlf_and_bom(env, tmp_path: Path) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", b"\xef\xbb\xbfhttp://a.com/\r\nhttp://b.com/\tk=v\r\n")
    c = inject(conf, store, seeds)
    assert c.get("injected") == 2 and c.get("rejected") == 0
    assert row(store, "http://b.com/").metadata["k"] == b"v"


def test_a_latin1_byte_in_a_seed_url_is_kept_as_its_percent_escape(env, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """An editor's Latin-1 e-acute stays the byte the line has (%E9), not U+FFFD (%EF%BF%BD: another URL)."""
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", b"http://a.com/caf\xe9\tk=v\xe9\n")
    c = inject(conf, store, seeds)
    assert c.get("injected") == 1
    assert urls(store) == ["http://a.com/caf%E9"]
    assert row(store, "http://a.com/caf%E9").metadata["k"] == "v\ufffd".encode()
    assert "seeds.txt:1: not UTF-8" in caplog.text


def test_duplicate_lines_in_one_file(env, tmp_path: Path) -> None:
    conf, store = env
    seeds = write(tmp_path, "seeds.txt", "http://a.com/\nhttp://A.com:80/#x\n")
    c = inject(conf, store, seeds)
    assert c.get("injected") == 1 and c.get("known") == 1
    assert urls(store) == ["http://a.com/"]


# ------------------------------------------------------------------ re-inject


def _crawled(store: DataStore, url: str) -> None:
    """Make the row look fetched, as later jobs would."""
    page = row(store, url)
    page.status = 2
    page.score = 7.0
    page.fetch_time = 123456789000
    page.title = "fetched title"
    page.retries_since_fetch = 1
    page.metadata["old"] = b"1"
    Mark.GENERATE.put(page, "b1")
    store.put(page.key, page)
    store.flush()


def test_reinject_keeps_known_rows(env, tmp_path: Path) -> None:
    conf, store = env
    inject(conf, store, write(tmp_path, "s1.txt", "http://a.com/\n"))
    _crawled(store, "http://a.com/")
    c = inject(conf, store, write(tmp_path, "s2.txt", "http://a.com/\tnutch.score=9\tk=v\nhttp://b.com/\n"))
    assert (c.get("injected"), c.get("known")) == (1, 1)
    a = row(store, "http://a.com/")
    assert a.status == 2 and a.score == 7.0 and a.fetch_time == 123456789000
    assert a.title == "fetched title"
    assert "k" not in a.metadata
    assert a.markers["_gnmrk_"] == "b1"


def test_reinject_overwrite_replaces(env, tmp_path: Path) -> None:
    conf, store = env
    inject(conf, store, write(tmp_path, "s1.txt", "http://a.com/\n"))
    _crawled(store, "http://a.com/")
    before = int(time.time() * 1000)
    c = inject(conf, store, write(tmp_path, "s2.txt", "http://a.com/\tk=v\n"), overwrite=True)
    assert c.get("overwritten") == 1 and c.get("injected") == 1
    a = row(store, "http://a.com/")
    assert a.status == 0 and a.score == 1.0 and a.fetch_time >= before
    assert a.title is None  # a fresh row: nothing of the old one survives
    assert a.retries_since_fetch == 0
    assert "old" not in a.metadata and a.metadata["k"] == b"v"
    assert a.markers == {"dist": "0", "_injmrk_": "y"}
    assert store.count(("_gnmrk_", None)) == 0


def test_reinject_update_applies_metadata_keeps_status(env, tmp_path: Path) -> None:
    conf, store = env
    inject(conf, store, write(tmp_path, "s1.txt", "http://a.com/\nhttp://c.com/\n"))
    _crawled(store, "http://a.com/")
    seeds = write(tmp_path, "s2.txt", "http://a.com/\tnutch.score=3\tnutch.fetchInterval=60\tk=v\n"
                                      "http://b.com/\tnutch.score=2\nhttp://c.com/\tonly=meta\n")
    c = inject(conf, store, seeds, update=True)
    assert c.get("updated") == 2 and c.get("injected") == 1
    a = row(store, "http://a.com/")
    assert a.status == 2 and a.fetch_time == 123456789000 and a.title == "fetched title"
    assert a.score == 3.0 and a.fetch_interval == 60
    assert a.metadata["k"] == b"v"
    assert a.metadata["old"] == b"1"  # merged, not replaced
    assert a.markers["_gnmrk_"] == "b1"
    assert row(store, "http://b.com/").score == 2.0
    cc = row(store, "http://c.com/")
    assert cc.metadata["only"] == b"meta" and get_cash(cc) == 1.0  # the cash in metadata survives
    assert cc.score == 1.0


# ------------------------------------------------------------------ seed paths


def test_seed_folder_with_several_files(env, tmp_path: Path) -> None:
    conf, store = env
    d = tmp_path / "urls"
    write(d, "a.txt", "http://a.com/\n")
    write(d, "b.txt", "http://b.com/\n# c\nhttp://bb.com/\n")
    write(d, ".hidden", "http://hidden.com/\n")
    (d / "sub").mkdir()
    write(d / "sub", "c.txt", "http://sub.com/\n")
    c = inject(conf, store, d)
    assert c.get("injected") == 3
    assert urls(store) == ["http://a.com/", "http://b.com/", "http://bb.com/"]


def test_bad_line_reports_its_own_file(env, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf, store = env
    d = tmp_path / "urls"
    write(d, "a.txt", "http://a.com/\n")
    write(d, "b.txt", "\n\nnot a url\n")
    inject(conf, store, d)
    assert f"{d / 'b.txt'}:3: " in capsys.readouterr().err


def test_nonexistent_seed_path(env, tmp_path: Path) -> None:
    conf, _ = env
    with pytest.raises(NutchError, match="does not exist"):
        InjectorJob(conf, tmp_path / "missing.txt")


def test_empty_seed_folder(env, tmp_path: Path) -> None:
    conf, _ = env
    (tmp_path / "empty").mkdir()
    with pytest.raises(NutchError, match="no files"):
        InjectorJob(conf, tmp_path / "empty")


def test_empty_seed_file_injects_nothing(env, tmp_path: Path) -> None:
    conf, store = env
    c = inject(conf, store, write(tmp_path, "s.txt", ""))
    assert c.get("injected") == 0
    assert urls(store) == []


def test_many_seeds_with_small_batches(backend: str, tmp_path: Path) -> None:
    conf = make_conf(tmp_path, backend, **{"storage.write.batch.size": 7})
    store = open_store(conf, "inj" + uuid.uuid4().hex[:10])
    try:
        lines = "".join(f"http://h{i % 13}.example.com/p{i}\n" for i in range(300))
        lines += "http://h1.example.com/p1\n"  # a duplicate after many flushes
        c = inject(conf, store, write(tmp_path, "s.txt", lines))
        assert c.get("injected") == 300 and c.get("known") == 1
        assert store.count() == 300
        assert store.count(("_injmrk_", "y")) == 300
    finally:
        store.drop_schema()
        store.close()


def test_a_bad_dns_property_fails_inject_before_any_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """inject resolves its seeds' hosts with the fetcher's DNS settings at its end: a bad one is refused up front,
    in one line, with no row written."""
    from tests.crawlutil import cli, conf_for, defines, rows, seed_file

    seeds = seed_file(tmp_path, "http://127.0.1.1:8/")
    assert cli("inject", seeds, "-crawlId", "baddns", *defines(tmp_path, "sqlite"), "-D", "fetcher.dns.timeout=0") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fetcher.dns.timeout=0" in err[0], err
    assert not (tmp_path / "crawl").exists() or not rows(conf_for(tmp_path, "sqlite"), "baddns")


def _text_bytes(b: bytes) -> bytes:
    return bytes(x for x in b if (x >= 32 or x == 9) and x not in b"\x7fB\xfe\xff")


@settings(max_examples=200, deadline=None)
@given(files=st.lists(st.lists(st.binary(max_size=12).map(_text_bytes),
                               max_size=30), min_size=1, max_size=4),
       ends=st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=1, max_size=4), last=st.booleans(),
       bom=st.booleans(), n=st.integers(1, 6))
@example(files=[[b"\xef\xbb\xbf"]], ends=[b"\n"], last=False, bom=False, n=1)  # drawn: a file that is only a BOM
def test_seed_splits_give_every_line_once_with_its_number(tmp_path_factory: pytest.TempPathFactory,
                                                         files: list[list[bytes]], ends: list[bytes], last: bool,
                                                         bom: bool, n: int) -> None:
    """The seed files cut into n splits of bytes: read back, every line of every file once, in order, with its
    file and line number, as reading the files line by line gives them. (Text lines: no control bytes, nothing
    that opens as a bzip2 or UTF-16 file.)"""
    folder = tmp_path_factory.mktemp("seeds")
    expected: list[tuple[str, int, bytes]] = []
    for i, lines in enumerate(files):
        end = ends[i % len(ends)]
        data = end.join(lines) + (end if last and lines else b"")
        path = folder / f"s{i}.txt"
        path.write_bytes((b"\xef\xbb\xbf" if bom and i == 0 else b"") + data)
        with open(path, "rb") as f:
            for k, raw in enumerate(f, 1):
                raw = raw[3:] if k == 1 and raw.startswith(b"\xef\xbb\xbf") else raw  # a BOM, written or drawn
                if raw:  # (a file that is only a BOM has no line)
                    expected.append((str(path), k, raw))
    splits = seed_splits(folder, n)
    got = [(p.source, k, raw) for split in splits for p in split
           for k, raw in enumerate(io.BytesIO(p.data), p.first)]
    assert got == expected
    assert len(splits) <= n + len(files)


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "utf-16"])
def test_compressed_and_utf16_seed_files_inject_as_plain_ones(env, tmp_path: Path, kind: str) -> None:
    """Hadoop's text input (Nutch's injector) reads .gz and .bz2 seed files; Windows editors save "Unicode" as
    UTF-16 with a BOM."""
    import bz2
    import gzip

    conf, store = env
    text = "# seeds\r\nhttp://a.example/\r\nhttp://b.example/x\tnutch.score=2\r\n"
    data = {"gzip": lambda: gzip.compress(text.encode()), "bzip2": lambda: bz2.compress(text.encode()),
            "utf-16": lambda: text.encode("utf-16")}[kind]()
    c = inject(conf, store, write(tmp_path, "seeds.bin", data))
    assert (c.get("injected"), c.get("rejected")) == (2, 0)
    assert urls(store) == ["http://a.example/", "http://b.example/x"]
    assert row(store, "http://b.example/x").score == 2.0


def test_a_file_that_is_not_text_fails_before_any_row(tmp_path: Path) -> None:
    """A binary file given as seeds (or a compressed one cut short): one line naming it, no table made; long
    bad lines of a text file are cut in their message."""
    import os
    import subprocess
    import sys

    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "cut.gz").write_bytes(__import__("gzip").compress(b"http://a.example/\n" * 1000)[:60])
    (tmp_path / "long.txt").write_text("http://a.example/" + "x" * 100_000 + " y\n")
    env = {**os.environ, "NUTCH2_OPTS": ""}
    for name, message in (("binary.bin", "is not text (binary bytes)"), ("cut.gz", "does not decompress")):
        for command in (["inject", str(tmp_path / name)], ["crawl", str(tmp_path / name), "-rounds", "1"]):
            p = subprocess.run([sys.executable, "-m", "nutch2", *command, "-crawlId", "nt", "-D",
                                f"storage.data.dir={tmp_path / 'crawl'}", "-D", "http.agent.name=t"],
                               capture_output=True, text=True, env=env, timeout=120)
            assert p.returncode == 1 and message in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
            assert not list((tmp_path / "crawl").glob("nt_*")), command
    p = subprocess.run([sys.executable, "-m", "nutch2", "inject", str(tmp_path / "long.txt"), "-crawlId", "nl",
                        "-D", f"storage.data.dir={tmp_path / 'crawl'}"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 1 and "URL contains whitespace" in p.stderr and "(100019 characters)" in p.stderr
    assert max(len(line) for line in p.stderr.splitlines()) < 400, p.stderr


@pytest.mark.parametrize("command", ["inject", "crawl"])
def test_an_inject_of_only_rejected_lines_leaves_no_crawl_behind(tmp_path: Path, command: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Every seed line rejected: one line names the cause and the fix, the exit is 1, and a crawl the command
    created is gone again (a later command, or a mistyped -crawlId, finds no crawl); an existing crawl keeps its
    rows."""
    from nutch2.stores import crawl_ids
    from tests.crawlutil import cli, conf_for, defines, rows, seed_file

    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    bad = write(tmp_path, "bad.txt", "ftp://x.example.com/\nnot a url\nmailto:a@b\n")
    extra = ["-rounds", "1"] if command == "crawl" else []
    capsys.readouterr()
    assert cli(command, bad, "-crawlId", "fresh", *extra, *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert "no URL was injected (2 lines rejected, 1 URL filtered out)" in err[-1], err
    assert "conf/regex-urlfilter.txt" in err[-1] and "crawl fresh was not created" in err[-1], err
    assert crawl_ids(conf) == []
    assert not list((tmp_path / "crawl").glob("fresh_webpage.sqlite*"))
    assert cli("readdb", "-crawlId", "fresh", "-stats", *d) == 1
    assert "no crawl db" in capsys.readouterr().err

    assert cli("inject", seed_file(tmp_path, "http://127.0.1.1:8/a"), "-crawlId", "kept", *d) == 0
    before = {k: p.values() for k, p in rows(conf, "kept").items()}
    capsys.readouterr()
    assert cli(command, bad, "-crawlId", "kept", *extra, *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "no URL was injected" in err[-1] and "not created" not in err[-1], err
    assert {k: p.values() for k, p in rows(conf, "kept").items()} == before and len(before) == 1
    assert crawl_ids(conf) == ["kept"]


@pytest.mark.parametrize("command", ["inject", "crawl"])
def test_a_rerun_after_a_kill_before_the_empty_crawl_was_dropped_leaves_no_crawl(tmp_path: Path,
                                                                                 command: str) -> None:
    """kill -9 after the command made a new crawl's table and injected nothing, before it dropped the table: the
    same command again ends as an uninterrupted run does (no crawl left, "was not created"). A crawl whose killed
    creator wrote rows, and an empty crawl no killed creator left, are kept."""
    from nutch2.stores import crawl_ids
    from tests.crawlutil import conf_for, defines, rows, seed_file
    from tests.helpers import KILLED, nutch2

    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    bad = write(tmp_path, "bad.txt", "ftp://x.example.com/\nnot a url\nmailto:a@b\n")
    extra = ["-rounds", "1"] if command == "crawl" else []
    killed = nutch2(command, bad, "-crawlId", "fresh", *extra, *d, failpoints="runner.job=1")  # the inject job ended
    assert killed.returncode == KILLED, killed.stderr
    assert crawl_ids(conf) == ["fresh"]  # what the kill left: the empty table
    again = nutch2(command, bad, "-crawlId", "fresh", *extra, *d)
    assert again.returncode == 1, again.stderr
    assert "no URL was injected" in again.stderr and "crawl fresh was not created" in again.stderr, again.stderr
    assert crawl_ids(conf) == []
    assert not list((tmp_path / "crawl").glob("fresh_webpage.sqlite*"))

    # the killed creator had written a row: the crawl is kept, and so is its row
    good = seed_file(tmp_path, "http://127.0.1.1:8/a")
    assert nutch2(command, good, "-crawlId", "kept", *extra, *d, failpoints="runner.job=1").returncode == KILLED
    before = {k: p.values() for k, p in rows(conf, "kept").items()}
    assert len(before) == 1
    again = nutch2(command, bad, "-crawlId", "kept", *extra, *d)
    assert again.returncode == 1 and "not created" not in again.stderr, again.stderr
    assert {k: p.values() for k, p in rows(conf, "kept").items()} == before
    assert crawl_ids(conf) == ["kept"]

    # an empty crawl that no killed creator left (made by another command that ended): kept
    from nutch2.stores import open_store

    open_store(conf, "other", create=True).close()
    again = nutch2(command, bad, "-crawlId", "other", *extra, *d)
    assert again.returncode == 1 and "not created" not in again.stderr, again.stderr
    assert crawl_ids(conf) == ["kept", "other"]


def test_an_empty_crawl_whose_creator_stopped_in_this_process_is_taken_on(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The job server runs every job in its own process: an inject job stopped after it made the crawl and before
    it wrote a row leaves the record of a process that still runs. The next inject of the server takes the empty
    crawl on (and drops it when it writes nothing either); a creator still running in the process is left alone."""
    from nutch2.stores import crawl_ids, creation_begins, creation_ends
    from tests.crawlutil import cli, conf_for, defines

    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    bad = write(tmp_path, "bad.txt", "not a url\n")
    open_store(conf, "srv", create=True).close()
    holder = creation_begins(conf, "srv", "inject", True)
    assert holder is not None
    assert creation_begins(conf, "srv", "inject", False) is None  # it runs: not another command's to take on
    creation_ends(conf, "srv", holder, keep=True)  # stopped
    capsys.readouterr()
    assert cli("inject", bad, "-crawlId", "srv", *d) == 1
    err = capsys.readouterr().err
    assert "was stopped before it wrote one" in err and "crawl srv was not created" in err, err
    assert crawl_ids(conf) == []
