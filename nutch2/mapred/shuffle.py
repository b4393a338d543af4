"""The runners' shuffle: map output per reducer, spilled to disk past a memory budget, merged for the reduce.

Like Hadoop's map output buffer (``mapreduce.task.io.sort.mb``): each map task collects (key, value) pairs per
partition. When the serialised size of what it holds passes the budget (estimated from a sample of records), it
sorts each partition and writes it as a run file in the job's spill folder (under ``mapreduce.cluster.local.dir``).
At the end of the task what is left becomes one more run, kept in memory (threads of one process) or written
too (worker processes, which hand their runs to reducers in other processes as file names). A reducer reads
one sorted stream, the merge of its partition's runs. A job's memory is thus bounded by the budget, not by its
input (an updatedb emitting a link datum per outlink, a fetch of a 100 000-URL batch).
"""

from __future__ import annotations

import heapq
import os
import pickle
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nutch2.errors import NutchError

Pair = tuple[Any, Any]
SortKey = Callable[[Pair], Any]
Run = list[Pair] | Path  # sorted pairs in memory, or a spill file of them

_PREFIX = "nutch2-shuffle-"  # spill folders are named <prefix><pid>-<random>
_CHUNK = 128  # pairs per pickle in a run file (class references are written once per chunk); a merge holds one
# chunk of each run it reads: 1024 made a reduce over many small runs hold most of its input
_SAMPLE_FIRST = 16  # records measured exactly before sampling starts
_SAMPLE_EVERY = 64  # then one record in this many


class SpillDir:
    """The spill folder of one job run, made on first use; remove() deletes it. Picklable: worker processes
    write their runs into the same folder."""

    def __init__(self, local_dir: str | None) -> None:
        self.local_dir = local_dir or None
        self.path: Path | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"local_dir": self.local_dir, "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["local_dir"])  # type: ignore[misc]
        self.path = state["path"]

    def create(self) -> Path:
        """Make the folder now (the driver does, before it ships the folder to worker processes)."""
        with self._lock:
            if self.path is None:
                parent = Path(self.local_dir or tempfile.gettempdir())
                try:
                    parent.mkdir(parents=True, exist_ok=True)
                    _remove_stale_spills(parent)
                    self.path = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent))
                except OSError as e:
                    raise self._error(e) from None
            return self.path

    def write(self, partition: int, run: list[Pair]) -> Path:
        """Write one sorted run to a new file (a unique name: tasks of every process write into the folder); a
        disk that cannot take it is a one-line error naming the property."""
        folder = self.create()
        try:
            fd, name = tempfile.mkstemp(prefix=f"spill-{partition}-", suffix=".pkl", dir=folder)
            path = Path(name)
            with open(fd, "wb") as f:
                for i in range(0, len(run), _CHUNK):
                    pickle.dump(run[i:i + _CHUNK], f, pickle.HIGHEST_PROTOCOL)
        except OSError as e:
            raise self._error(e) from None
        return path

    def _error(self, e: OSError) -> NutchError:
        where = self.local_dir or tempfile.gettempdir()
        return NutchError(f"cannot spill map output to {where}: {e.strerror or e}; free space there or set "
                          "mapreduce.cluster.local.dir (or raise mapreduce.task.io.sort.mb)")

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


class MapOutput:
    """One task's output buffer: pairs per partition, spilled as sorted runs when over the budget.

    close() returns the runs of each partition: with to_disk, every run is a file (for reducers in other
    processes); otherwise the last one stays in memory.
    """

    def __init__(self, partitions: int, sort_key: SortKey, budget_bytes: int, spill: SpillDir,
                 to_disk: bool = False) -> None:
        self.partitions = partitions
        self.sort_key = sort_key
        self.budget = max(1, budget_bytes)
        self.spill = spill
        self.to_disk = to_disk
        self.runs: list[list[Run]] = [[] for _ in range(partitions)]
        self.spilled_records = 0
        self._buf: list[list[Pair]] = [[] for _ in range(partitions)]
        self._count = 0
        self._sampled = 0
        self._sampled_bytes = 0

    def collect(self, partition: int, key: Any, value: Any) -> None:
        pair = (key, value)
        self._buf[partition].append(pair)
        self._count += 1
        if self._sampled < _SAMPLE_FIRST or self._count % _SAMPLE_EVERY == 0:
            self._sampled += 1
            self._sampled_bytes += len(pickle.dumps(pair, pickle.HIGHEST_PROTOCOL))
        if self._count * self._sampled_bytes >= self.budget * self._sampled:
            self.spilled_records += self._count  # spilled because the budget was reached (Hadoop's counter)
            self._hand_off(spill=True)
            self._count = 0

    def close(self) -> list[list[Run]]:
        """End of the task: what is still buffered becomes the last run of each partition."""
        self._hand_off(spill=self.to_disk)
        runs, self.runs = self.runs, [[] for _ in range(self.partitions)]
        return runs

    def _hand_off(self, spill: bool) -> None:
        """Sort each partition's buffer into a run (written to the spill folder, or kept); start empty."""
        for p, buf in enumerate(self._buf):
            if buf:
                buf.sort(key=self.sort_key)
                self.runs[p].append(self.spill.write(p, buf) if spill else buf)
        self._buf = [[] for _ in range(self.partitions)]


def merge(runs: Iterable[Run], sort_key: SortKey) -> Iterator[Pair]:
    """Every pair of a partition's runs in sort order (equal keys keep the order of the runs)."""
    streams = [iter(r) if isinstance(r, list) else _read_run(r) for r in runs]
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=sort_key)


def _remove_stale_spills(parent: Path) -> None:
    """Delete spill folders left by jobs that were killed (their process is gone)."""
    try:
        candidates = list(parent.glob(f"{_PREFIX}*-*"))
    except OSError:
        return
    for folder in candidates:
        pid = folder.name[len(_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _read_run(path: Path) -> Iterator[Pair]:
    """The pairs of one spill file, in order; the file is deleted once read."""
    try:
        with open(path, "rb") as f:
            while True:
                try:
                    chunk = pickle.load(f)
                except EOFError:
                    break
                yield from chunk
    except (OSError, pickle.UnpicklingError) as e:
        raise NutchError(f"cannot read map output spill {path}: {getattr(e, 'strerror', None) or e}; was "
                         "mapreduce.cluster.local.dir cleaned while the job ran? run the job again") from None
    path.unlink(missing_ok=True)
