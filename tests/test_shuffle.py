"""The local runner's shuffle: spilled runs merge to the same sorted stream as in-memory ones, files are removed."""

from __future__ import annotations

import pickle
import random
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest

from nutch2.errors import ConfigError, NutchError
from nutch2.runner import Job, LocalRunner, TaskContext
from nutch2.shuffle import Shuffle
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import make_conf


def _pairs(n: int, seed: int) -> list[tuple[int, tuple[int, str]]]:
    rng = random.Random(seed)
    return [(rng.randint(0, 50), (seed, f"v{i}-" + "x" * rng.randint(0, 40))) for i in range(n)]


@pytest.mark.parametrize("budget", [10**9, 200, 1])
def test_runs_merge_to_a_stable_sort(tmp_path: Path, budget: int) -> None:
    shuffle = Shuffle(3, itemgetter(0), budget, str(tmp_path / "local"))
    expected: list[list[tuple]] = [[], [], []]
    for seed in (1, 2):  # two map tasks, one after the other: equal keys keep task, then emit order
        out = shuffle.collector()
        for key, value in _pairs(2000, seed):
            out.collect(key % 3, key, value)
            expected[key % 3].append((key, value))
        out.close()
    assert (shuffle.spills > 0) == (budget < 10**9)
    if budget < 10**9:
        assert any((tmp_path / "local").rglob("spill-*"))
    for p in range(3):
        assert list(shuffle.reader(p)) == sorted(expected[p], key=itemgetter(0))
    shuffle.close()
    assert not (tmp_path / "local").exists() or not any((tmp_path / "local").iterdir())


def test_budget_bounds_what_is_held(tmp_path: Path) -> None:
    """With a 4 KB budget no in-memory buffer grows past a handful of ~100-byte records."""
    shuffle = Shuffle(1, itemgetter(0), 4096, str(tmp_path))
    out = shuffle.collector()
    largest = 0
    for key, value in _pairs(5000, 3):
        out.collect(0, key, value)
        largest = max(largest, len(out._buf[0]))
    out.close()
    assert largest < 200
    assert shuffle.spilled_records + sum(len(r) for r in shuffle._runs[0] if isinstance(r, list)) == 5000
    assert len(list(shuffle.reader(0))) == 5000
    shuffle.close()


def test_webpage_pickles_with_its_dirty_fields() -> None:
    page = WebPage("com.example:http/", status=2, outlinks={"http://example.com/a": "a"})
    page.clear_dirty()
    page.title = "T"
    copy = pickle.loads(pickle.dumps(page, pickle.HIGHEST_PROTOCOL))
    assert copy == page and copy.dirty_fields() == {"title"}
    copy.outlinks["http://example.com/b"] = "b"  # maps still mark their field dirty after unpickling
    assert copy.dirty_fields() == {"title", "outlinks"} and page.dirty_fields() == {"title"}


class _WordCount(Job):
    """Counts words of rows' titles; the reduce writes the count of each word as a row's score."""

    name = "wordcount"
    has_reduce = True

    def __init__(self, conf, titles: list[str], fail: bool = False) -> None:
        super().__init__(conf)
        self.titles, self.fail = titles, fail
        self.result: dict[str, int] = {}

    def inputs(self, store, n: int) -> list[Any]:
        return [self.titles[i::n] for i in range(n)]

    def map(self, record: str, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        for word in record.split():
            yield word, 1

    def reduce(self, key: str, values: list[Any], ctx: TaskContext) -> None:
        if self.fail:
            raise RuntimeError("reducer failed")
        self.result[key] = sum(values)


@pytest.mark.parametrize("sort_mb", [16, 0.001])
def test_runner_spills_and_cleans_up(tmp_path: Path, sort_mb: float) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    titles = [" ".join(rng.choice(words) for _ in range(20)) for _ in range(500)]
    local = tmp_path / "local"
    conf = make_conf(tmp_path, "memory", **{"mapreduce.task.io.sort.mb": sort_mb, "mapreduce.cluster.local.dir": local})
    job = _WordCount(conf, titles)
    counters = LocalRunner(conf, 3).run(job, open_store(conf, "wc"))
    expected: dict[str, int] = {}
    for t in titles:
        for w in t.split():
            expected[w] = expected.get(w, 0) + 1
    assert job.result == expected
    assert (counters.get("spilled_records") > 0) == (sort_mb < 1)
    assert not local.exists() or not any(local.iterdir())

    failing = _WordCount(conf, titles, fail=True)
    with pytest.raises(RuntimeError, match="reducer failed"):
        LocalRunner(conf, 3).run(failing, open_store(conf, "wc"))
    assert not local.exists() or not any(local.iterdir())


def test_non_positive_sort_budget_is_a_config_error(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "memory", **{"mapreduce.task.io.sort.mb": 0})
    with pytest.raises(ConfigError, match=r"mapreduce.task.io.sort.mb=0 must be > 0"):
        LocalRunner(conf, 1).run(_WordCount(conf, ["a b"]), open_store(conf, "wc"))


def test_unreadable_spill_is_a_one_line_error(tmp_path: Path) -> None:
    shuffle = Shuffle(1, itemgetter(0), 1, str(tmp_path))
    out = shuffle.collector()
    for key, value in _pairs(50, 4):
        out.collect(0, key, value)
    out.close()
    spill = next(tmp_path.rglob("spill-*"))
    spill.write_bytes(spill.read_bytes()[:20])  # truncated, as by a full disk
    with pytest.raises(NutchError, match=r"cannot read map output spill .*spill-.*mapreduce.cluster.local.dir"):
        list(shuffle.reader(0))
    shuffle.close()
