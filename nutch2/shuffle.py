"""The local runner's shuffle: map output per reducer, spilled to disk past a memory budget, merged for the reduce.

Like Hadoop's map output buffer (``mapreduce.task.io.sort.mb``): each map task collects (key, value) pairs per
partition. When the serialised size of what it holds passes the budget (estimated from a sample of records), it
sorts each partition and writes it as a run file under ``mapreduce.cluster.local.dir``. A reducer reads one
sorted stream, the merge of its partition's runs. A job's memory is thus bounded by the budget, not by its input
(an updatedb emitting a link datum per outlink, a fetch of a 100 000-URL batch).
"""

from __future__ import annotations

import heapq
import os
import pickle
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nutch2.errors import NutchError

Pair = tuple[Any, Any]
SortKey = Callable[[Pair], Any]

_PREFIX = "nutch2-shuffle-"  # spill folders are named <prefix><pid>-<random>
_CHUNK = 1024  # pairs per pickle in a run file: class references are written once per chunk
_SAMPLE_FIRST = 16  # records measured exactly before sampling starts
_SAMPLE_EVERY = 64  # then one record in this many


class Shuffle:
    """Sorted runs per partition, in memory or on disk; one per job run. Close it to delete its files."""

    def __init__(self, partitions: int, sort_key: SortKey, budget_bytes: int, local_dir: str | None = None) -> None:
        self.partitions = partitions
        self.sort_key = sort_key
        self.budget = max(1, budget_bytes)
        self.local_dir = local_dir or None
        self.spilled_records = 0
        self.spills = 0
        self._runs: list[list[list[Pair] | Path]] = [[] for _ in range(partitions)]
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._seq = 0

    def collector(self) -> MapOutput:
        """A buffer for one map task (not shared between threads)."""
        return MapOutput(self)

    def reader(self, partition: int) -> Iterator[Pair]:
        """Every pair of a partition in sort order (runs merged; equal keys keep map order)."""
        runs = self._runs[partition]
        self._runs[partition] = []
        streams = [iter(r) if isinstance(r, list) else _read_run(r) for r in runs]
        if len(streams) == 1:
            return streams[0]
        return heapq.merge(*streams, key=self.sort_key)

    def close(self) -> None:
        """Drop what is left and delete the spill directory."""
        self._runs = [[] for _ in range(self.partitions)]
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # ------------------------------------------------------------------ used by MapOutput
    def _add_memory_run(self, partition: int, run: list[Pair]) -> None:
        with self._lock:
            self._runs[partition].append(run)

    def _spill(self, partition: int, run: list[Pair]) -> None:
        try:
            with self._lock:
                if self._dir is None:
                    parent = self.local_dir
                    if parent:
                        Path(parent).mkdir(parents=True, exist_ok=True)
                    _remove_stale_spills(Path(parent or tempfile.gettempdir()))
                    self._dir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent))
                self._seq += 1
                path = self._dir / f"spill-{partition}-{self._seq}.pkl"
            with open(path, "wb") as f:
                for i in range(0, len(run), _CHUNK):
                    pickle.dump(run[i:i + _CHUNK], f, pickle.HIGHEST_PROTOCOL)
        except OSError as e:
            where = self.local_dir or tempfile.gettempdir()
            raise NutchError(f"cannot spill map output to {where}: {e.strerror or e}; free space there or set "
                             "mapreduce.cluster.local.dir (or raise mapreduce.task.io.sort.mb)") from None
        with self._lock:
            self._runs[partition].append(path)
            self.spilled_records += len(run)
            self.spills += 1


class MapOutput:
    """One map task's output buffer: pairs per partition, spilled as sorted runs when over the budget."""

    def __init__(self, shuffle: Shuffle) -> None:
        self._shuffle = shuffle
        self._buf: list[list[Pair]] = [[] for _ in range(shuffle.partitions)]
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
        if self._count * self._sampled_bytes >= self._shuffle.budget * self._sampled:
            self._spill()

    def close(self) -> None:
        """End of the map task: hand what is still buffered to the shuffle as in-memory runs."""
        self._hand_off(self._shuffle._add_memory_run)

    def _spill(self) -> None:
        self._hand_off(self._shuffle._spill)
        self._count = 0

    def _hand_off(self, take: Callable[[int, list[Pair]], None]) -> None:
        """Sort each partition's buffer and give it to `take` as a run; start empty buffers."""
        for p, buf in enumerate(self._buf):
            if buf:
                buf.sort(key=self._shuffle.sort_key)
                take(p, buf)
        self._buf = [[] for _ in range(self._shuffle.partitions)]


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
