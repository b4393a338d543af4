"""The README as a new user meets it: its first command (install, then the demo crawl) and its tour of the
commands, every line run in order in a fresh virtual environment that has only what `pip install -e .` gives,
against the test web started as the README says (`python -m tests.testweb`, in a process of its own, here with
fewer hosts and pages) and the real Solr and OpenSearch. Each line's output is checked for what the README's comment
on it says it gives. The only change: `pip install -e '.[solr,opensearch]'` names the repository, as the tour runs
in a folder of its own (seeds/, crawl/, out/ there) rather than the repository root."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import OPENSEARCH_URL, SOLR_URL, require_opensearch, require_solr

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.integration, pytest.mark.slow]
FIRST_LINE = ('export NUTCH2_OPTS="-D http.agent.name=MyBot -D fetcher.server.delay=0.05 '
              '-D fetcher.address.allow=127.0.1.0/24"')


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def first_commands() -> list[str]:
    """The two commands the README opens with."""
    block = re.search(r"```bash\n(.*?)```", readme(), re.S).group(1)  # type: ignore[union-attr]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def tour() -> list[str]:
    section = readme().split("## A tour of the commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    return [line for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with nutch2 installed as the README's first command installs it (no extras)."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    pip = subprocess.run([str(where / "bin" / "pip"), "install", "-q", "-e", str(REPO)], capture_output=True,
                         text=True, timeout=900)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return where


def environment(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUTCH_CONF_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}


def test_the_first_command_installs_and_crawls(venv: Path, tmp_path: Path) -> None:
    install, demo = first_commands()[0].split(" && ")
    assert install == "pip install -e ." and demo == "python tests/demo.py", first_commands()
    p = subprocess.run(["python", "tests/demo.py", str(tmp_path / "demo")], cwd=REPO, env=environment(venv),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert re.search(r"^crawl: demo: \d+ URLs: .*FETCHED=\d+", p.stdout, re.M), p.stdout[-2000:]
    assert "TOTAL urls:" in p.stdout and "Traceback" not in p.stderr
    assert first_commands()[1] == "bash tests/run.sh"  # the second: CI runs it (.ci/run)


# what each line of the tour gives, as its comment says: (a fragment of the line, check(rc, stdout, stderr, out/))
Check = Callable[[int, str, str, Path], object]


def _counter(err: str, name: str) -> int:
    m = re.search(rf"\b{name}=(\d+)", err)
    return int(m.group(1)) if m else 0


def _ok(rc: int, out: str, err: str) -> bool:
    assert rc == 0, err[-2000:]
    assert "Traceback" not in err and not re.search(r"^nutch2 \S+: error", err, re.M), err[-2000:]
    return True


def _row(rc: int, out: str, err: str, _: Path) -> bool:
    _ok(rc, out, err)
    assert re.search(r"^status:\s+2 \(FETCHED\)$", out, re.M), out
    assert "b'" not in out and "{'" not in out and "<CrawlStatus" not in out, out  # no Python reprs
    return True


CHECKS: list[tuple[str, Check]] = [
    ("export NUTCH2_OPTS=", lambda rc, out, err, _: _ok(rc, out, err)),
    ("nutch2 inject seeds/", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "injected") >= 1)),
    ("B=$(nutch2 generate", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "generated") >= 1)),
    ("nutch2 fetch $B -threads", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "fetched") >= 1)),
    ("nutch2 fetch $B -resume", lambda rc, out, err, _: _ok(rc, out, err)),
    ("nutch2 parse $B", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "parsed") >= 1)),
    ("nutch2 updatedb $B", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "new_rows") >= 1)),
    ("-rounds 3 -topN 1000", lambda rc, out, err, _: (_ok(rc, out, err), re.search(r"^crawl: news: \d+ URLs: ", out,
                                                                                   re.M))),
    ("readdb -stats -sort", lambda rc, out, err, _: (_ok(rc, out, err), "TOTAL urls:" in out, "127.0.1.1" in out)),
    ("readdb -url", _row),
    ("readdb -dump out/", lambda rc, out, err, d: (_ok(rc, out, err), list((d / "out").glob("part-*.jsonl")))),
    ("nutch2 parsechecker", lambda rc, out, err, _: (_ok(rc, out, err), "fetching: " in out, "Outlinks: " in out)),
    ("pip install -e '.[solr,opensearch]'", lambda rc, out, err, _: _ok(rc, out, err)),
    ("S=http://", lambda rc, out, err, _: _ok(rc, out, err)),
    ("O=http://", lambda rc, out, err, _: _ok(rc, out, err)),
    ("nutch2 index $B -solr", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "indexed") >= 1)),
    ("nutch2 index $B -opensearch", lambda rc, out, err, _: (_ok(rc, out, err), _counter(err, "indexed") >= 1)),
    ("nutch2 clean", lambda rc, out, err, _: (_ok(rc, out, err), "deleted=" in err)),
    ("nutch2 dedup", lambda rc, out, err, _: (_ok(rc, out, err), "duplicates=" in err)),
    ("nutch2 search", lambda rc, out, err, _: (_ok(rc, out, err), re.match(r"[1-9]\d* hits? for 'host page'", out),
                                               "*" in out)),
    ("-rounds 3 -solr $S", lambda rc, out, err, _: (_ok(rc, out, err), re.search(r"^crawl: news: \d+ URLs: ", out,
                                                                                 re.M), "clean: finished" in err)),
]


def _check(line: str, rc: int, out: str, err: str, folder: Path) -> None:
    found = [check for fragment, check in CHECKS if fragment in line]
    assert len(found) == 1, f"the test does not know what this README line gives: {line}"
    results = found[0](rc, out, err, folder)
    if isinstance(results, tuple):
        assert all(results), (line, out[-1500:], err[-1500:])


@pytest.mark.timeout(1800)
def test_the_readme_tour_runs_as_written(venv: Path, tmp_path: Path) -> None:
    require_solr()
    require_opensearch()
    lines = tour()
    assert lines[0].startswith(FIRST_LINE), lines[:2]
    assert any(f"S={SOLR_URL} " in line for line in lines), "the tour uses the Solr of docker/services.sh"
    assert any(f"O={OPENSEARCH_URL}/" in line for line in lines), "and its OpenSearch"
    script, logs = [], tmp_path / "lines"
    logs.mkdir()
    for i, line in enumerate(lines):
        run = line.replace("pip install -e '.[solr,opensearch]'", f"pip install -q -e '{REPO}[solr,opensearch]'")
        script.append(f"{{ {run}\n}} >{logs}/{i}.out 2>{logs}/{i}.err; echo $? >{logs}/{i}.rc")
    env = environment(venv)
    web = subprocess.Popen([sys.executable, "-m", "tests.testweb", "--hosts", "3", "--pages", "6"], cwd=tmp_path,
                           env={**env, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    try:
        started = web.stdout.readline()  # type: ignore[union-attr]
        assert "written to seeds/seeds.txt" in started, started
        assert shutil.which("nutch2", path=env["PATH"]) == str(venv / "bin" / "nutch2")
        p = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=1700)
    finally:
        web.terminate()
        web.wait(10)
    assert p.returncode == 0, p.stderr[-3000:]
    for i, line in enumerate(lines):
        rc = int((logs / f"{i}.rc").read_text())
        out, err = (logs / f"{i}.out").read_text(), (logs / f"{i}.err").read_text()
        _check(line, rc, out, err, tmp_path)


def test_the_testweb_module_serves_until_stopped(tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "tests.testweb", "--help"], cwd=REPO, capture_output=True,
                               text=True, timeout=60).stdout
    assert "--hosts" in help_text and "--pages" in help_text and "--seeds" in help_text and "--delay" in help_text
    proc = subprocess.Popen([sys.executable, "-m", "tests.testweb", "--hosts", "3", "--pages", "2", "--delay", "0.5",
                             "--seeds", str(tmp_path / "s.txt")], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "seed http://127.0.1.1:" in line and (tmp_path / "s.txt").read_text().startswith("http://127.0.1.1:")
        import requests

        seed = (tmp_path / "s.txt").read_text().strip()
        answer = requests.get(seed, timeout=10)
        assert answer.status_code == 200 and answer.elapsed.total_seconds() >= 0.5  # --delay: it waited
    finally:
        proc.terminate()
        proc.wait(10)
