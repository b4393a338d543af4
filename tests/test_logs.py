"""Levels per logger (`log.level.<logger>`): a logger of nutch2 and those below it at their own level, on stderr and
in the log file, in the driver and in worker processes; a name that is no logger of nutch2, or a value that is no
level, is one line and exit 1."""

from __future__ import annotations

import re
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.crawlutil import defines, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb

# a line of the log file: date, time, level, process id, message (nutch2/logs.py _FILE_FORMAT)
FILE_LINE = re.compile(r"^\S+ \S+ (DEBUG|INFO|WARNING|ERROR)\s+(\d+) (.*)$")
# DEBUG lines of other loggers than the fetcher's, which -v would show
OTHERS = ("conf: ", "store: opened ", "fetch: took the lease of batch ", "fetch: local runner: ",
          "fetch: map task 0 started")


run = partial(nutch2, env={"NUTCH_CONF_DIR": None})  # the repository's conf/, not this process's NUTCH_CONF_DIR


def file_lines(data_dir: Path) -> list[tuple[str, int, str]]:
    """(level, process id, message) of each line of the crawl's log file."""
    found = []
    for line in (data_dir / "logs" / "hadoop.log").read_text(encoding="utf-8").splitlines():
        m = FILE_LINE.match(line)
        if m:
            found.append((m.group(1), int(m.group(2)), m.group(3)))
    return found


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    """The one line of a command that failed with exit 1, and no traceback."""
    assert p.returncode == 1 and "Traceback" not in p.stderr + p.stdout, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_the_fetcher_at_debug_logs_its_debug_lines_to_stderr_and_the_log_file_the_rest_at_info(
        tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite:local")
    with TestWeb(hosts=2, pages_per_host=2, traps=False) as web:
        seeds = seed_file(tmp_path, *[web.page_url(h, i) for h in range(2) for i in range(2)])
        assert run("inject", seeds, *d).returncode == 0
        batch = run("generate", *d).stdout.strip()
        fetch = run("fetch", batch, *d, "-D", "log.level.nutch2.fetch=DEBUG")
    assert fetch.returncode == 0, fetch.stderr
    lines = fetch.stderr.splitlines()
    robots = [x for x in lines if x.startswith("robots.txt (")]  # nutch2.fetch.robots, at DEBUG
    assert len(robots) == 2, fetch.stderr
    assert any(x.startswith("fetch: finished in ") for x in lines), fetch.stderr  # INFO lines as ever
    assert not [x for x in lines if x.startswith(OTHERS)], fetch.stderr
    assert "not a nutch2 property" not in fetch.stderr
    logged = file_lines(tmp_path / "crawl")
    assert {(level, msg) for level, _, msg in logged if msg.startswith("robots.txt (")} == {
        ("DEBUG", x) for x in robots}
    assert not [msg for level, _, msg in logged if level == "DEBUG" and not msg.startswith("robots.txt (")], logged
    assert any(level == "INFO" and msg.startswith("fetch: finished in ") for level, _, msg in logged)


def test_a_logger_level_reaches_the_worker_processes(tmp_path: Path) -> None:
    """The processes runner: task 0 runs in the driver, task 1 in a worker process, and both log their start at
    DEBUG (nutch2.mapred.task) once that logger is at DEBUG."""
    d = defines(tmp_path, "sqlite:local", **{"mapreduce.job.tasks": 2})
    seeds = seed_file(tmp_path, *[f"http://h{i}.test/" for i in range(6)])
    assert run("inject", seeds, *d).returncode == 0
    batch = run("generate", *d).stdout.strip()
    fetch = run("fetch", batch, *d, "-D", "mapreduce.framework.name=processes", "-D", "http.timeout=1000",
                "-D", "log.level.nutch2.mapred.task=DEBUG")  # the hosts do not resolve: quick
    assert fetch.returncode == 0, fetch.stderr
    lines = fetch.stderr.splitlines()
    for text in ("fetch: map task 0 started", "fetch: map task 1 started"):
        assert text in lines, (text, fetch.stderr)
    assert not [x for x in lines if x.startswith(("conf: ", "store: opened ", "fetch: processes runner: "))]
    logged = file_lines(tmp_path / "crawl")
    driver = {pid for _, pid, msg in logged if msg.startswith("fetch: finished in ")}
    started = {msg: (level, pid) for level, pid, msg in logged if msg.startswith("fetch: map task ")
               and msg.endswith(" started")}
    assert len(driver) == 1 and started["fetch: map task 0 started"] == ("DEBUG", *driver), logged
    level, worker = started["fetch: map task 1 started"]
    assert level == "DEBUG" and worker not in driver, logged


def test_a_logger_at_warning_hides_its_info_lines(tmp_path: Path) -> None:
    """The injector's lines about the seeds it skips (nutch2.jobs.inject) go with -D log.level.nutch2.jobs.inject=
    WARNING, on stderr and in the log file; the job's summary line (nutch2.tools) stays."""
    d = defines(tmp_path, "sqlite:local")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nnot a url\n", encoding="utf-8")
    said = run("inject", seeds, *d)
    assert said.returncode == 0 and "seeds.txt:2: " in said.stderr, said.stderr
    quiet = run("inject", seeds, *d, "-D", "log.level.nutch2.jobs.inject=WARNING")
    assert quiet.returncode == 0, quiet.stderr
    assert "seeds.txt:2: " not in quiet.stderr and "inject: finished in " in quiet.stderr, quiet.stderr
    logged = [msg for _, _, msg in file_lines(tmp_path / "crawl")]
    assert sum(f"{seeds}:2: " in msg for msg in logged) == 1, logged  # the first inject's
    assert sum(msg.startswith("inject: finished in ") for msg in logged) == 2, logged


def test_modules_and_packages_of_nutch2_are_loggers(tmp_path: Path) -> None:
    """nutch2.stores and nutch2.jobs (stores/ and jobs/ in the repository) and their modules are loggers too."""
    d = defines(tmp_path, "sqlite:local")
    p = run("inject", seed_file(tmp_path, "http://a.test/"), *d, "-D", "log.level.nutch2.stores=DEBUG",
            "-D", "log.level.nutch2.stores.sqlite=info", "-D", "log.level.nutch2.jobs=INFO", "-D", "log.level=INFO")
    assert p.returncode == 0, p.stderr
    assert "store: opened sqlite table webpage" in p.stderr  # nutch2.stores at DEBUG
    assert "warning" not in p.stderr and "conf: " not in p.stderr, p.stderr


@pytest.mark.parametrize(("define", "line"), [
    ("log.level.nutch2.fetcher=DEBUG", "log.level.nutch2.fetcher: nutch2.fetcher is not a logger of nutch2; give a "
                                       "module or package of it (nutch2.fetch, nutch2.stores.sqlite, ...)"),
    ("log.level.urllib3=DEBUG", "log.level.urllib3: urllib3 is not a logger of nutch2; give a module or package of "
                                "it (nutch2.fetch, nutch2.stores.sqlite, ...)"),
    ("log.level.nutch2.fetch=LOUD", "log.level.nutch2.fetch='LOUD' is not a log level; give DEBUG, INFO, WARNING or "
                                    "ERROR"),
    ("log.level=LOUD", "log.level='LOUD' is not a log level; give DEBUG, INFO, WARNING or ERROR"),
])
def test_a_logger_nutch2_has_not_or_a_level_that_is_none_is_one_line(tmp_path: Path, define: str, line: str) -> None:
    p = run("inject", seed_file(tmp_path, "http://a.test/"), *defines(tmp_path, "sqlite:local"), "-D", define)
    assert one_line(p) == f"nutch2 inject: error: {line}"


def test_the_newest_progress_line_is_the_running_jobs() -> None:
    """The job API shows the newest progress line: a crawl's fetch of a later round after its parse, and no line
    of a job that ended."""
    from nutch2.logs import Progress, clear_progress, last_progress

    clear_progress()
    fetch, parse = Progress("fetch", tty=False), Progress("parse", tty=False)
    fetch.update("fetch: 1 page")
    parse.update("parse: 1 row")
    assert last_progress() == "parse: 1 row"
    parse.done()
    fetch.update("fetch: 2 pages")
    assert last_progress() == "fetch: 2 pages"
    parse = Progress("parse", tty=False)
    parse.update("parse: 2 rows")
    fetch.update("fetch: 3 pages")  # (a pipelined crawl's fetch beside its parse)
    assert last_progress() == "fetch: 3 pages" and last_progress("parse") == "parse: 2 rows"
    fetch.done()
    parse.done()
    assert last_progress() == ""
