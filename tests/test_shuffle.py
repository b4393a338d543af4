"""The local runner's shuffle: spilled runs merge to the same sorted stream as in-memory ones, files are removed."""

from __future__ import annotations

import pickle
import random
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest

from nutch2.errors import ConfigError, NutchError
from nutch2.mapred import stop
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Job, TaskContext
from nutch2.mapred.runner import LocalRunner
from nutch2.mapred.shuffle import MapOutput, SpillDir, merge
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import make_conf


def _pairs(n: int, seed: int) -> list[tuple[int, tuple[int, str]]]:
    rng = random.Random(seed)
    return [(rng.randint(0, 50), (seed, f"v{i}-" + "x" * rng.randint(0, 40))) for i in range(n)]


def _shuffle(partitions: int, budget: int, local: Path, tasks: list[list[tuple]], to_disk: bool = False
             ) -> tuple[list[list], int]:
    """Each task's pairs through its own MapOutput; the runs of every task per partition, and records spilled."""
    spill = SpillDir(str(local))
    runs: list[list] = [[] for _ in range(partitions)]
    spilled = 0
    for pairs in tasks:
        out = MapOutput(partitions, itemgetter(0), budget, spill, to_disk)
        for key, value in pairs:
            out.collect(key % partitions, key, value)
        for p, r in enumerate(out.close()):
            runs[p].extend(r)
        spilled += out.spilled_records
    return runs, spilled


@pytest.mark.parametrize("budget, to_disk", [(10**9, False), (200, False), (1, False), (10**9, True)])
def test_runs_merge_to_a_stable_sort(tmp_path: Path, budget: int, to_disk: bool) -> None:
    tasks = [_pairs(2000, seed) for seed in (1, 2)]  # two map tasks: equal keys keep task, then emit order
    runs, spilled = _shuffle(3, budget, tmp_path / "local", tasks, to_disk)
    assert (spilled > 0) == (budget < 10**9)
    if spilled or to_disk:
        assert any((tmp_path / "local").rglob("spill-*"))
    for p in range(3):
        expected = [pair for pairs in tasks for pair in pairs if pair[0] % 3 == p]
        assert list(merge(runs[p], itemgetter(0))) == sorted(expected, key=itemgetter(0))
    assert not any((tmp_path / "local").rglob("spill-*"))  # a run file is deleted once read


def test_budget_bounds_what_is_held(tmp_path: Path) -> None:
    """With a 4 KB budget no in-memory buffer grows past a handful of ~100-byte records."""
    out = MapOutput(1, itemgetter(0), 4096, SpillDir(str(tmp_path)))
    largest = 0
    for key, value in _pairs(5000, 3):
        out.collect(0, key, value)
        largest = max(largest, len(out._buf[0]))
    runs = out.close()
    assert largest < 200
    assert out.spilled_records + sum(len(r) for r in runs[0] if isinstance(r, list)) == 5000
    assert len(list(merge(runs[0], itemgetter(0)))) == 5000


def test_webpage_pickles_with_its_dirty_fields() -> None:
    page = WebPage("com.example:http/", status=2, outlinks={"http://example.com/a": "a"})
    page.clear_dirty()
    page.title = "T"
    copy = pickle.loads(pickle.dumps(page, pickle.HIGHEST_PROTOCOL))
    assert copy == page and copy.dirty_fields() == {"title"}
    copy.outlinks["http://example.com/b"] = "b"  # maps still mark their field dirty after unpickling
    assert copy.dirty_fields() == {"title", "outlinks"} and page.dirty_fields() == {"title"}


def test_a_new_page_is_new_until_written_and_not_after_a_pickle() -> None:
    """WebPage.new tells a store the row was absent: a pickled copy does not claim it (the safe side: a store
    then clears older cells as for any write), and a written page no longer does."""
    page = WebPage.new("com.example:http/")
    page.status = 1
    assert page.new_row and not WebPage("com.example:http/").new_row
    assert not pickle.loads(pickle.dumps(page, pickle.HIGHEST_PROTOCOL)).new_row
    page.clear_dirty()
    assert not page.new_row


def test_an_unloaded_field_is_not_shuffled_and_a_dirty_one_cannot_be_unloaded() -> None:
    page = WebPage("com.example:http/", status=2, outlinks={"http://example.com/a": "a"})
    page.clear_dirty()
    page.unload("outlinks")  # updatedb: the link datums carry them
    copy = pickle.loads(pickle.dumps(page, pickle.HIGHEST_PROTOCOL))
    assert "outlinks" not in copy.loaded() and copy.outlinks == {} and not copy.is_dirty()
    page.title = "T"
    with pytest.raises(ValueError, match="title has a value not yet written"):
        page.unload("title")


class _WordCount(Job):
    """Counts words of rows' titles; the reduce writes the count of each word as a row's score."""

    name = "wordcount"
    has_reduce = True

    def __init__(self, conf, titles: list[str], fail: bool = False) -> None:
        super().__init__(conf)
        self.titles, self.fail = titles, fail
        self.counts: dict[str, int] = {}

    def inputs(self, store, n: int) -> list[Any]:
        return [self.titles[i::n] for i in range(n)]

    def read(self, split: list[str], store) -> list[str]:
        return split

    def map(self, record: str, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        for word in record.split():
            yield word, 1

    def reduce(self, key: str, values: list[Any], ctx: TaskContext) -> None:
        if self.fail:
            raise RuntimeError("reducer failed")
        self.counts[key] = sum(values)

    def result(self, ctx: TaskContext) -> Any:
        return self.counts if ctx.step == 0 else None

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        self.counts = {k: v for part in results for k, v in part.items()}


@pytest.mark.parametrize("framework", ["local", "processes"])
@pytest.mark.parametrize("sort_mb", [16, 0.001])
def test_runner_spills_and_cleans_up(tmp_path: Path, sort_mb: float, framework: str) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    titles = [" ".join(rng.choice(words) for _ in range(20)) for _ in range(500)]
    local = tmp_path / "local"
    conf = make_conf(tmp_path, "sqlite", **{"mapreduce.task.io.sort.mb": sort_mb, "mapreduce.cluster.local.dir": local,
                                            "mapreduce.framework.name": framework})
    job = _WordCount(conf, titles)
    counters = make_runner(conf, 3).run(job, open_store(conf, "wc"))
    expected: dict[str, int] = {}
    for t in titles:
        for w in t.split():
            expected[w] = expected.get(w, 0) + 1
    assert job.counts == expected
    assert (counters.get("spilled_records") > 0) == (sort_mb < 1)
    assert not local.exists() or not any(local.iterdir())

    failing = _WordCount(conf, titles, fail=True)
    with pytest.raises(RuntimeError, match="reducer failed"):
        make_runner(conf, 3).run(failing, open_store(conf, "wc"))
    assert not local.exists() or not any(local.iterdir())
    again = _WordCount(conf, titles)  # a failed job leaves nothing behind that stops the next one
    make_runner(conf, 3).run(again, open_store(conf, "wc"))
    assert again.counts == expected


class _OneFails(Job):
    """Reducer 0 (the processes runner's driver runs it) works until stopped; the others fail at once."""

    name = "onefails"
    has_reduce = True

    def __init__(self, conf, marker: str) -> None:
        super().__init__(conf)
        self.marker = marker

    def inputs(self, store, n: int) -> list[Any]:
        return [["k0 k1 k2 k3 k4 k5"]] * n

    def read(self, split: list[str], store) -> list[str]:
        return split

    def map(self, record: str, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        for word in record.split():
            yield word, 1

    def partition(self, key: Any, value: Any, n: int) -> int:
        return int(key[1:]) % n

    def reduce(self, key: str, values: list[Any], ctx: TaskContext) -> None:
        if ctx.task != 0:
            raise RuntimeError(f"reducer {ctx.task} failed")
        end = time.monotonic() + 120
        while time.monotonic() < end:
            stop.check()
            time.sleep(0.05)
        Path(self.marker).write_text("reducer 0 was not stopped")


@pytest.mark.timeout(100)
def test_processes_a_failed_task_stops_the_drivers_own_task(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "sqlite", **{"mapreduce.framework.name": "processes"})
    marker = tmp_path / "marker"
    with pytest.raises(RuntimeError, match=r"reducer [12] failed"):
        make_runner(conf, 3).run(_OneFails(conf, str(marker)), open_store(conf, "of"))
    assert not marker.exists()  # the driver's task was asked to stop, not waited for to the end
    assert not stop.requested()  # and the stop was the job's own: nothing is left to stop the next job


def test_non_positive_sort_budget_is_a_config_error(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "memory", **{"mapreduce.task.io.sort.mb": 0})
    with pytest.raises(ConfigError, match=r"mapreduce.task.io.sort.mb=0 must be > 0"):
        LocalRunner(conf, 1).run(_WordCount(conf, ["a b"]), open_store(conf, "wc"))


def test_unreadable_spill_is_a_one_line_error(tmp_path: Path) -> None:
    runs, _ = _shuffle(1, 1, tmp_path, [_pairs(50, 4)])
    spill = next(tmp_path.rglob("spill-*"))
    spill.write_bytes(spill.read_bytes()[:20])  # truncated, as by a full disk
    with pytest.raises(NutchError, match=r"cannot read map output spill .*spill-.*mapreduce.cluster.local.dir"):
        list(merge(runs[0], itemgetter(0)))
