"""The README's tour of the commands runs as written (bash, `set -e`) against the test web started as the README
says (`python -m tests.testweb`, in a process of its own, here with fewer hosts and pages) and the real Solr. The
only change is the one the README offers for the test web: its NUTCH2_OPTS line with a short politeness delay.
The tour runs in a folder of its own (seeds/, crawl/, out/ there), with the repository on PYTHONPATH as if run
from the repository root."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SOLR_URL, require_solr

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.integration, pytest.mark.slow]
FIRST_LINE = 'export NUTCH2_OPTS="-D http.agent.name=MyBot"'


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def tour() -> str:
    section = readme().split("## A tour of the commands", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def quick_opts() -> str:
    """The NUTCH2_OPTS line the README gives for the test web."""
    section = readme().split("## A tour of the commands", 1)[1].split("```bash", 1)[0]
    return re.search(r"`(export NUTCH2_OPTS=\"[^`]*fetcher\.server\.delay[^`]*)`", section).group(1)  # type: ignore


def environment() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    env.pop("NUTCH_CONF_DIR", None)
    return env


@pytest.mark.timeout(900)
def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    require_solr()
    script = tour()
    assert script.startswith(FIRST_LINE), script[:200]
    if f"S={SOLR_URL} " not in script:
        pytest.skip(f"the tour uses the Solr of docker/services.sh; this run's is {SOLR_URL}")
    script = script.replace(FIRST_LINE, quick_opts(), 1)
    env = environment()
    web = subprocess.Popen([sys.executable, "-m", "tests.testweb", "--hosts", "3", "--pages", "6"], cwd=tmp_path,
                           env=env, stdout=subprocess.PIPE, text=True)
    try:
        started = web.stdout.readline()  # type: ignore[union-attr]
        assert "written to seeds/seeds.txt" in started, started
        p = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=840)
    finally:
        web.terminate()
        web.wait(10)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    assert "TOTAL urls:" in p.stdout and "fetching: " in p.stdout and "hits for 'open source crawler'" in p.stdout
    assert (tmp_path / "out").is_dir() and list((tmp_path / "out").glob("part-*.jsonl"))
    assert "crawl: news: " in p.stdout


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
