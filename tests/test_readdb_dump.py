"""readdb -dump killed anywhere: the same command writes the dump again, whole; a whole dump (its _SUCCESS) is
never written over."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawlutil import defines, seed_file
from tests.helpers import KILLED, nutch2


def dumped(folder: Path) -> list[str]:
    return sorted(line for part in folder.glob("part-*.jsonl") for line in part.read_text().splitlines())


@pytest.mark.parametrize("point", ["readdb.dump=1", "readdb.dump=25", "runner.job=1"])  # the last: once it ended
def test_a_killed_dump_is_written_again_by_the_same_command(tmp_path: Path, point: str) -> None:
    d = defines(tmp_path, "sqlite")
    seeds = seed_file(tmp_path, *[f"http://h{i % 5}.example.com/p{i}" for i in range(80)])
    assert nutch2("inject", seeds, "-crawlId", "dmp", *d).returncode == 0
    ref, out = tmp_path / "ref", tmp_path / "out"
    assert nutch2("readdb", "-dump", ref, "-crawlId", "dmp", *d).returncode == 0
    assert len(dumped(ref)) == 80 and (ref / "_SUCCESS").is_file()
    killed = nutch2("readdb", "-dump", out, "-crawlId", "dmp", *d, failpoints=point)
    # the command itself, or the worker process running the other task (a one-line error), was killed
    assert killed.returncode in (KILLED, 1), killed.stderr
    if point.startswith("readdb.dump"):  # killed while rows were written: the same command writes it again
        assert not (out / "_SUCCESS").exists()
        again = nutch2("readdb", "-dump", out, "-crawlId", "dmp", *d)
        assert again.returncode == 0, again.stderr
        assert "holds an interrupted dump" in again.stderr
    assert dumped(out) == dumped(ref) and (out / "_SUCCESS").is_file()
    assert not list(out.glob(".*.tmp"))
    whole = nutch2("readdb", "-dump", out, "-crawlId", "dmp", *d)
    assert whole.returncode == 1 and "not empty" in whole.stderr
