"""The README's tour of the commands runs as written (bash, `set -e`) against the test web a user starts with
`python -m tests.testweb`, and the real Solr; only the politeness delay is shortened."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_solr
from tests.testweb import TestWeb

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def tour() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## A tour of the commands", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.timeout(900)
def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    solr = require_solr()
    script = tour()
    assert 'export NUTCH2_OPTS="-D http.agent.name=MyBot"' in script
    script = script.replace('export NUTCH2_OPTS="-D http.agent.name=MyBot"',
                            'export NUTCH2_OPTS="-D http.agent.name=MyBot -D fetcher.server.delay=0.05"')
    script = script.replace("S=http://127.0.0.1:8983/solr/nutch", f"S={solr}")
    with TestWeb(hosts=3, pages_per_host=6, slow_seconds=0.5) as web:
        (tmp_path / "seeds").mkdir()
        (tmp_path / "seeds" / "seeds.txt").write_text(web.seed_url + "\n")  # what `python -m tests.testweb` writes
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        env.pop("NUTCH_CONF_DIR", None)
        p = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=840)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    assert "TOTAL urls:" in p.stdout and "fetching: " in p.stdout and "hits for 'open source crawler'" in p.stdout
    assert (tmp_path / "out").is_dir() and list((tmp_path / "out").glob("part-*.jsonl"))
    assert "crawl: news: " in p.stdout


def test_the_testweb_module_serves_until_stopped(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "tests.testweb", "--hosts", "3", "--pages", "2", "--seeds",
                             str(tmp_path / "s.txt")], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "seed http://127.0.1.1:" in line and (tmp_path / "s.txt").read_text().startswith("http://127.0.1.1:")
        import requests

        assert requests.get((tmp_path / "s.txt").read_text().strip(), timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)
