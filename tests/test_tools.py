"""The Tool layer seen from outside: the CLI and the job API offer the same tools with the same arguments; config
holes each give their one line; logs go where operators look; Nutch's checker tools."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from nutch2.cli import build_parser
from nutch2.tools import TOOLS, job_types
from nutch2.tools.args import ArgError, from_json, json_schema
from tests.crawlutil import defines, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb

REPO = Path(__file__).resolve().parent.parent
NOT_JOBS = {"server", "search", "parsechecker", "indexchecker", "filterchecker", "normalizerchecker", "plugins"}


def run(*args: object, cwd: Path = REPO, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`nutch2 <args>` (tests/helpers.py) without this process's NUTCH_CONF_DIR: these tests choose the conf dir."""
    return nutch2(*args, cwd=cwd, env={"NUTCH_CONF_DIR": None, **(env or {})}, input=stdin, timeout=timeout)


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------------- one registry
def test_every_cli_command_is_a_tool_and_every_job_type_a_cli_command() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    commands = set(sub.choices)  # type: ignore[union-attr]
    assert commands == set(TOOLS)
    assert set(job_types()) == commands - NOT_JOBS  # sitemap, warc, warcimport, crawl, readdb... included
    assert {"sitemap", "warc", "warcimport", "crawl", "clean", "dedup", "readdb"} <= set(job_types())
    for name in job_types():
        schema = json_schema(TOOLS[name].Args)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "solr" not in schema["properties"]  # Solr is the server's, never the request's


def test_arguments_are_checked_once_for_both_doors() -> None:
    fetch = TOOLS["fetch"].Args
    assert from_json(fetch, {"batch": "b1", "threads": 3, "resume": True}).threads == 3
    for bad, words in (({"batch": "b1", "threads": 0}, "out of range"), ({"batch": "b1", "numTasks": 100000},
                                                                       "out of range"),
                       ({"batch": "b1", "threads": 2.5}, "whole number"), ({"batch": "b", "all": True}, "exactly one"),
                       ({"batch": "b", "resume": True, "force": True}, "cannot be used together")):
        with pytest.raises(ArgError, match=words):
            from_json(fetch, bad)
    # a list past the cap says so (it said "must be a non-empty list" of 10,001 seeds)
    inject = TOOLS["inject"].Args
    assert len(from_json(inject, {"seedUrls": ["http://a.example/"] * 10_000}).seedUrls) == 10_000
    with pytest.raises(ArgError, match="seedUrls has 10001 items; at most 10000 are taken"):
        from_json(inject, {"seedUrls": ["http://a.example/"] * 10_001})
    warc = TOOLS["warc"].Args
    with pytest.raises(ArgError, match="finite"):
        from_json(warc, {"outdir": "o", "all": True, "maxSize": float("nan")})
    # the CLI gives the same messages (exit 2, one line, no traceback)
    for args, words in ((["fetch", "b1", "-threads", "0"], "-threads 0 is out of range"),
                        (["warc", "o", "-all", "-maxSize", "nan"], "-maxSize must be a finite number"),
                        (["generate", "-numTasks", "5000"], "-numTasks 5000 is out of range"),
                        (["fetch", "b", "-resume", "-force"], "-resume and -force cannot be used together")):
        p = run(*args)
        assert p.returncode == 2 and words in one_line(p), p.stderr


def test_no_abbreviations(tmp_path: Path) -> None:
    for args in (["generate", "-t", "3"], ["fetch", "-all", "-thread", "3"], ["fetch", "b", "-res"],
                 ["generate", "-top", "3"]):
        p = run(*args, *defines(tmp_path, "sqlite"))
        assert p.returncode == 2 and "unrecognized arguments" in one_line(p), (args, p.stderr)


# ---------------------------------------------------------------------------------------------------- config holes
def test_a_conf_folder_with_only_a_url_filter_is_an_overlay(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "regex-urlfilter.txt").write_text("-.\n")  # reject everything
    seeds = seed_file(tmp_path, "http://example.com/")
    p = run("inject", seeds, "-D", f"storage.data.dir={tmp_path / 'crawl'}", cwd=tmp_path)
    assert p.returncode == 1 and "no URL was injected" in p.stderr and " filtered=1 " in p.stderr, p.stderr
    # and $NUTCH_CONF_DIR wins over ./conf
    other = tmp_path / "other"
    other.mkdir()
    p = run("inject", seeds, "-D", f"storage.data.dir={tmp_path / 'crawl'}", cwd=tmp_path,
            env={"NUTCH_CONF_DIR": str(other)})
    assert p.returncode == 0 and " injected=1 " in p.stderr, p.stderr


def test_nutch_properties_nutch2_lacks_get_a_warning_each(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    props = {"fetcher.store.robotstxt": "true", "http.robot.rules.whitelist": "example.com", "http.agent.name": "Bot"}
    conf.joinpath("nutch-site.xml").write_text(
        "<configuration>" + "".join(f"<property><name>{k}</name><value>{v}</value></property>"
                                    for k, v in props.items()) + "</configuration>")
    p = run("readdb", "-stats", "--conf", conf, "-D", f"storage.data.dir={tmp_path}")
    warnings = [x for x in p.stderr.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 2, p.stderr
    assert "fetcher.store.robotstxt" in warnings[0] and "http.robot.rules.whitelist" in warnings[1], p.stderr
    assert all("does not implement" in w for w in warnings)


def test_a_missing_optional_dependency_is_one_line(tmp_path: Path) -> None:
    gora = "org.apache.gora.hbase.store.HBaseStore"
    code = ("import sys; sys.modules['happybase'] = None; from nutch2.cli import main; "
            f"sys.exit(main(['readdb', '-stats', '-D', 'storage.data.store.class={gora}',"
            f" '-D', 'storage.data.dir={tmp_path}']))")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "pip install 'nutch2[hbase]'" in one_line(p), p.stderr
    for module in ("markupsafe", "uvicorn"):  # the server's extra: markupsafe is jinja2's, read by the search page
        code = (f"import sys; sys.modules[{module!r}] = None; from nutch2.cli import main; "
                f"sys.exit(main(['server', '-port', '0', '-D', 'storage.data.dir={tmp_path}']))")
        p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "pip install 'nutch2[server]'" in one_line(p), p.stderr


def test_bad_numbers_in_the_configuration_are_one_line(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    for define, words in (("fetcher.server.delay=nan", "not a finite number"),
                          ("fetcher.server.delay=inf", "not a finite number"),
                          ("mapreduce.job.tasks=5000", "out of range"), ("http.timeout=0", "out of range"),
                          ("mapreduce.processes.worker.max.mb=-1", "out of range"),
                          ("storage.write.batch.mb=0", "out of range"), ("storage.sqlite.cache.mb=abc", "number"),
                          ("mapreduce.task.io.sort.mb=-1", "> 0"), ("http.content.limit=-2", "out of range"),
                          ("db.fetch.interval.default=-100", "out of range"), ("storage.data.dir=", "is empty")):
        p = run("generate", *d, "-D", define)
        assert p.returncode == 1 and words in one_line(p) and define.split("=")[0] in one_line(p), p.stderr
    p = run("generate", "-numTasks", "157", *d, "-D", "mapreduce.framework.name=processes")
    assert p.returncode == 1 and "at most" in one_line(p) and "-numTasks" in one_line(p)


# ---------------------------------------------------------------------------------------------------- logs
def test_jobs_log_to_a_rotated_file_and_q_keeps_stderr_quiet(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite", **{"log.file.max.size.mb": 0.001, "log.file.backups": 2})
    seeds = seed_file(tmp_path, *[f"http://192.0.2.{i}/" for i in range(30)])  # TEST-NET-1: no DNS lookup
    p = run("inject", seeds, "-q", *d)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    log = tmp_path / "crawl" / "logs" / "hadoop.log"
    assert "inject: finished in" in log.read_text()
    for _ in range(12):
        assert run("inject", seeds, "-q", *d).returncode == 0
    assert (tmp_path / "crawl" / "logs" / "hadoop.log.1").is_file()  # rotated at 1 kB
    assert not (tmp_path / "crawl" / "logs" / "hadoop.log.3").exists()  # two backups kept
    p = run("readdb", "-stats", "-v", *d)
    assert p.returncode == 0


def test_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    assert run("inject", seed_file(tmp_path, "http://a.test/"), *d).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "readdb", "-stats", *d], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # type: ignore[union-attr]  # `| head -0`: the reader is gone before the first line
    err = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.wait(60) == 141 and err == "", err


@pytest.mark.slow
def test_progress_off_a_terminal_is_a_periodic_log_line(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.3, "log.progress.interval": 0.5,
                                       "fetcher.progress.interval": 0.25})
    with TestWeb(hosts=3, pages_per_host=8, traps=False) as web:
        seeds = seed_file(tmp_path, *[web.page_url(h, i) for h in range(3) for i in range(8)])
        assert run("inject", seeds, *d).returncode == 0
        batch = run("generate", *d).stdout.strip()
        p = run("fetch", batch, *d)
    assert p.returncode == 0
    lines = [x for x in p.stderr.splitlines() if x.startswith("fetch: ") and " pages, " in x]
    assert len(lines) >= 2 and "\r" not in p.stderr, p.stderr
    assert " errors, " in lines[-1] and " pages/s (" in lines[-1] and " avg), " in lines[-1] and "kB/s" in lines[-1]
    assert sum(x.startswith("fetch: finished in") for x in p.stderr.splitlines()) == 1  # one summary


@pytest.mark.slow
def test_progress_shows_no_speed_before_a_page_and_counts_one_in_the_singular(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite:local", **{"log.progress.interval": 0.3, "fetcher.progress.interval": 0.1})
    with TestWeb(hosts=1, pages_per_host=3, traps=False, page_delay=1.5) as web:  # each page 1.5 s late
        seeds = seed_file(tmp_path, web.page_url(0, 1), web.page_url(0, 2))
        assert run("inject", seeds, *d).returncode == 0
        batch = run("generate", *d).stdout.strip()
        p = run("fetch", batch, *d)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.startswith("fetch: ") and " threads active" in x]
    before = [x for x in lines if x.startswith("fetch: 0 pages, 0 errors, ")]
    assert before and not any("/s" in x for x in before), lines  # no speed of nothing
    after = [x for x in lines if x.startswith("fetch: 1 page, 0 errors, ")]  # "1 page", not "1 pages"
    assert after and all(" pages/s (" in x and " kB/s (" in x for x in after), lines
    assert not any(re.search(r"(?<![\d.])0 (kB/s|avg\))|\b1 (pages|errors|queues)\b", x) for x in lines), lines
    assert any(x.endswith(" queued in 1 queue") for x in lines), lines


@pytest.mark.slow
def test_a_stop_with_no_request_in_flight_says_so(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite:local", **{"fetcher.server.delay": 30})
    with TestWeb(hosts=1, pages_per_host=3, traps=False) as web:
        seeds = seed_file(tmp_path, web.page_url(0, 1), web.page_url(0, 2))
        assert run("inject", seeds, *d).returncode == 0
        batch = run("generate", *d).stdout.strip()
        fetch = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, *d], cwd=REPO,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not [r for r in web.requests() if r.path != "/robots.txt"]:  # the first page is answered; the next
            assert time.monotonic() < deadline and fetch.poll() is None, "no page was fetched"  # waits 30 s
            time.sleep(0.05)
        time.sleep(1.0)
        fetch.send_signal(signal.SIGINT)
        err = fetch.communicate(timeout=60)[1]
    assert fetch.returncode == 130, err
    assert "nutch2 fetch: stopping: finishing the work in hand (no request in flight); Ctrl-C again to quit now" \
        in err.splitlines(), err


@pytest.mark.parametrize("level", ["-v", "log.level=DEBUG"])
def test_debug_lines_say_what_a_run_did(tmp_path: Path, level: str) -> None:
    """-v (or log.level=DEBUG) adds the configuration read, the store opened, the locks, the runner, its tasks
    (worker processes' too); without it none of them shows. Each runner says its own: local here, processes
    for the generate."""
    d = defines(tmp_path, "sqlite:local", **{"mapreduce.job.tasks": 2})
    verbose = ["-v"] if level == "-v" else ["-D", level]
    seeds = seed_file(tmp_path, *[f"http://h{i}.test/" for i in range(6)])
    quiet = run("inject", seeds, *d)
    assert quiet.returncode == 0 and "conf: " not in quiet.stderr and "task 0" not in quiet.stderr, quiet.stderr
    gen = run("generate", *d, *verbose, "-D", "mapreduce.framework.name=processes")
    assert gen.returncode == 0, gen.stderr
    crawl = tmp_path / "crawl"
    expected = [f"conf: read {REPO / 'conf' / 'nutch-default.toml'} (", "conf: -D: storage.data.store.class, ",
                "generate: took the crawl's lease (webpage)",
                f"store: opened sqlite table webpage ({crawl / 'webpage.sqlite'})",
                "generate: processes runner: 2 map tasks, reduce step 0: 2 tasks",
                "generate: map task 0 started", "generate: map task 1 ended: ", "generate: reduce 0 task 1 ended: ",
                "generate: released the crawl's lease (webpage)"]
    lines = gen.stderr.splitlines()
    for text in expected:
        assert any(line.startswith(text) for line in lines), (text, gen.stderr)
    batch = gen.stdout.strip()
    fetch = run("fetch", batch, *d, *verbose, "-D", "http.timeout=1000")  # the hosts do not resolve: quick
    assert fetch.returncode == 0, fetch.stderr
    for text in (f"fetch: took the lease of batch {batch} (", "fetch: local runner: 2 map tasks",
                 f"fetch: released the lease of batch {batch} ("):
        assert text in fetch.stderr, (text, fetch.stderr)
    assert "DEBUG" in (crawl / "logs" / "hadoop.log").read_text()  # the log file has them too
    # lines logged before the command made the data dir reach the log file once it exists
    fresh = tmp_path / "fresh"
    assert run("inject", seeds, *verbose, "-D", f"storage.data.dir={fresh}").returncode == 0
    assert f"conf: folder {REPO / 'conf'}" in (fresh / "logs" / "hadoop.log").read_text()


def test_why_a_command_failed_is_in_the_log_file(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    assert run("inject", seed_file(tmp_path, "http://a.test/"), *d).returncode == 0
    failed = run("fetch", "nosuch", "-q", *d)
    assert failed.returncode == 1 and "no rows carry batch id 'nosuch'" in one_line(failed)
    log = (tmp_path / "crawl" / "logs" / "hadoop.log").read_text().splitlines()
    assert any(" ERROR " in line and line.endswith(one_line(failed)) for line in log), log[-3:]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_job_shows_its_progress_off_a_terminal(tmp_path: Path) -> None:
    """generate, parse, updatedb and index: a log line every log.progress.interval seconds with the rows (then
    records) done and their rate, as fetch does with pages."""
    from tests.conftest import require_solr
    from tests.crawlutil import conf_for
    from tests.helpers import fetched_batch

    solr = require_solr()
    props = {"log.progress.interval": 0}
    d = defines(tmp_path, "sqlite", **props)
    crawl_id = f"pg{os.getpid()}"
    fetched_batch(conf_for(tmp_path, "sqlite", **props), crawl_id, 1200)
    try:
        for args in (["parse", "B"], ["updatedb", "B"], ["index", "B", "-solr", solr], ["generate"]):
            p = run(*args, "-crawlId", crawl_id, *d)
            assert p.returncode == 0, p.stderr
            job = args[0]
            lines = [x for x in p.stderr.splitlines() if x.startswith(f"{job}: map: ")]
            assert lines and "\r" not in p.stderr, p.stderr
            counts = [int(re.fullmatch(rf"{job}: map: (\d+) rows, [\d.]+ rows/s \([\d.]+ avg\)", x).group(1))
                      for x in lines]
            assert counts == sorted(counts) and counts[-1] <= 1200 + 5000, counts
            assert sum(x.startswith(f"{job}: finished in") for x in p.stderr.splitlines()) == 1
        # inject reads its seed lines in chunks: the line counts them, not the chunks
        seeds = tmp_path / "many.txt"
        seeds.write_text("".join(f"http://h{i % 50}.example/{i}\n" for i in range(20000)))
        p = run("inject", seeds, "-crawlId", f"{crawl_id}s", "-D", "inject.address.check.seconds=0", *d)
        assert p.returncode == 0, p.stderr
        lines = [x for x in p.stderr.splitlines() if x.startswith("inject: map: ")]
        counts = [int(re.fullmatch(r"inject: map: (\d+) seed lines, [\d.]+ seed lines/s \([\d.]+ avg\)", x)
                      .group(1)) for x in lines]
        assert counts and counts == sorted(counts) and counts[-1] <= 20000, p.stderr
        assert counts[-1] > 1000, counts  # lines, not the 40 chunks of 500
    finally:
        requests.post(f"{solr}/update?commit=true", json={"delete": {"query": f"id:{crawl_id}!*"}}, timeout=30)


# ---------------------------------------------------------------------------------------------------- checkers
@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=4) as w:
        yield w


def test_parsechecker_shows_the_parse_and_writes_nothing(web: TestWeb, tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    page = web.pages[web.seed_url]
    p = run("parsechecker", web.seed_url, "-dumpText", *d)
    assert p.returncode == 0, p.stderr
    assert f"fetching: {web.seed_url}" in p.stdout and "Status: SUCCESS/OK" in p.stdout
    assert f"Title: {page.title}" in p.stdout and page.unique_word in p.stdout
    assert f"Outlinks: {p.stdout.count('  outlink: toUrl: ')}" in p.stdout
    assert "Content-Type=text/html" in p.stdout
    assert not (tmp_path / "crawl").exists()
    missing = run("parsechecker", web.trap_url("/traps/missing.html"), *d)
    assert missing.returncode == 1 and "fetch of" in one_line(missing)


def test_indexchecker_shows_the_document_field_by_field(web: TestWeb, tmp_path: Path) -> None:
    p = run("indexchecker", web.seed_url, *defines(tmp_path, "sqlite"))
    assert p.returncode == 0, p.stderr
    fields = dict(line.split(" :\t", 1) for line in p.stdout.splitlines() if " :\t" in line)
    assert fields["url"] == web.seed_url and fields["title"] == web.pages[web.seed_url].title
    assert {"id", "host", "digest", "tstamp", "boost", "content"} <= set(fields)
    noindex = run("indexchecker", web.trap_url("/traps/noindex.html"), *defines(tmp_path, "sqlite"))
    assert noindex.returncode == 1 and "would not be indexed" in one_line(noindex)
    # a redirect followed inline: the url field is the repr URL, as index sends it (the id stays the source's)
    moved = run("indexchecker", web.trap_url("/traps/redirect-301"), *defines(tmp_path, "sqlite",
                                                                               **{"http.redirect.max": 2}))
    assert moved.returncode == 0, moved.stderr
    fields = dict(line.split(" :\t", 1) for line in moved.stdout.splitlines() if " :\t" in line)
    assert fields["url"] == web.trap_url("/traps/moved-target.html"), moved.stdout


def test_filterchecker_and_normalizerchecker_say_what_decided(tmp_path: Path) -> None:
    p = run("filterchecker", stdin="http://example.com/\nhttp://example.com/a.gif\nmailto:x@example.com\n")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("+http://example.com/\t") and "regex-urlfilter.txt:" in lines[0]
    assert lines[1].startswith("-http://example.com/a.gif\t") and "gif" in lines[1]
    assert lines[2].startswith("-mailto:x@example.com\t")
    n = run("normalizerchecker", "HTTP://Example.COM:80/a/../b/./c.html#frag", "-scope", "outlink")
    assert n.returncode == 0, n.stderr
    assert n.stdout.splitlines()[0] == "HTTP://Example.COM:80/a/../b/./c.html#frag\t->\thttp://example.com/b/c.html"
    assert "urlnormalizer-basic: http://example.com/b/c.html" in n.stdout
    bad = run("normalizerchecker", "http://a/", "-scope", "nope")
    assert bad.returncode == 2 and "-scope 'nope' is not one of" in one_line(bad)


def test_checker_options_as_nutch_has_them(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "regex-urlfilter.txt").write_text("-\\.gif$\n+^http://keep\\.example/\n")
    listed = run("filterchecker", "-listFilters", "--conf", conf)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[:2] == ["urlfilter.max.length\tURLs longer than 2048 characters are dropped",
                         f"urlfilter-regex\t{conf / 'regex-urlfilter.txt'} (2 rules)"]
    assert re.fullmatch(r"urlfilter-suffix\t\S*suffix-urlfilter.txt \(\d+ suffixes, rejected\)", lines[2]), lines
    # -stdin: URLs from stdin after those given as arguments; -filterName: that filter alone (no length check)
    long_url = "http://keep.example/" + "a" * 3000
    p = run("filterchecker", "http://keep.example/x.gif", "-stdin", "--conf", conf,
            stdin=f"http://keep.example/\nhttp://other.example/\n{long_url}\n")
    assert p.returncode == 0, p.stderr
    assert [line.split("\t")[0] for line in p.stdout.splitlines()] == [
        "-http://keep.example/x.gif", "+http://keep.example/", "-http://other.example/", f"-{long_url}"]
    assert "urlfilter.max.length" in p.stdout.splitlines()[3]
    alone = run("filterchecker", long_url, "-filterName", "urlfilter-regex", "--conf", conf)
    assert alone.returncode == 0 and alone.stdout.startswith(f"+{long_url}\t"), alone.stdout[:200]
    assert "checking the combination of these URL filters: urlfilter-regex" in alone.stderr
    bad = run("filterchecker", "http://a/", "-filterName", "urlfilter-nope")
    assert bad.returncode == 2 and "-filterName 'urlfilter-nope' is not one of urlfilter-regex" in one_line(bad)
    n = run("normalizerchecker", "-normalizer", "urlnormalizer-basic", "-scope", "fetcher", "-stdin",
            stdin="HTTP://Example.COM/a/../b\n")
    assert n.returncode == 0, n.stderr
    assert n.stdout.splitlines() == ["HTTP://Example.COM/a/../b\t->\thttp://example.com/b",
                                     "\turlnormalizer-basic: http://example.com/b"]
    bad = run("normalizerchecker", "http://a/", "-normalizer", "urlnormalizer-regex")
    assert bad.returncode == 2 and "-normalizer 'urlnormalizer-regex' is not one of" in one_line(bad)
