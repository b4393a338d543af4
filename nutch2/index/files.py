"""Index writers that write files (indexer-csv, indexer-jsonl): part files under an output folder, made visible
by the job's commit, the way Hadoop's FileOutputCommitter does it, so a killed job leaves nothing half-written.

    <outpath>/
      20261202T031500.123456Z-<run>/        one folder per committed run, in the order they were committed
        part-00000.csv                       the documents task 0 wrote
        part-00000-deleted.txt               ids of the documents task 0 deleted, one per line
        part-final-deleted.txt               ids deleted by the job's final step (clean)
        _SUCCESS                             the digest of the folder's parts
      _temporary/<run>/                      what the running (or an interrupted) run has written so far

- A task writes each file as a hidden ``.inprogress`` file in ``_temporary/<run>/`` and renames it to its part
  name when the task ends well (flush); a failed task removes its in-progress files (close).
- Before the tasks start, the driver empties ``_temporary/<run>/`` (begin): a rerun of the same command starts
  again from nothing, whatever an interrupted attempt left there.
- The job's commit, on the driver, renames ``_temporary/<run>/`` to a new folder named by the time and the run:
  one rename, so a run's parts appear all at once or not at all. When the newest committed folder holds exactly
  the same parts (a rerun after a kill that came between the commit and the rows' index marks), nothing is added.

Reading the output: take the folders whose names do not start with ``_`` in name order; in each, delete the ids
of ``*-deleted.txt``, then add (replace by id) the documents of the parts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.durable import sync_folder
from nutch2.errors import ConfigError
from nutch2.index.writers import IndexWriter, WriterSpec

STAGING = "_temporary"
SUCCESS = "_SUCCESS"
DELETED = "-deleted.txt"


def committed_runs(outpath: str | Path) -> list[Path]:
    """The committed run folders of an output folder, oldest first."""
    root = Path(outpath)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


class _PartFile:
    """One file of a task, written under a hidden name and renamed to its part name when sealed."""

    def __init__(self, folder: Path, name: str) -> None:
        self.path = folder / name
        self.tmp = folder / f".{name}.{uuid.uuid4().hex[:12]}.inprogress"
        for attempt in range(3):  # another run's commit may remove an empty _temporary/ meanwhile
            folder.mkdir(parents=True, exist_ok=True)
            try:
                self.file: IO[bytes] = open(self.tmp, "wb")  # noqa: SIM115 - closed by seal() or discard()
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def seal(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        sync_folder(self.path.parent)

    def discard(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)


class FileIndexWriter(IndexWriter):
    """Base of the file writers: a subclass sets ``suffix`` and ``default_outpath`` and says how a document is
    written (``header``, ``record``); it reads its own parameters in ``configure``."""

    suffix = ".txt"
    default_outpath = "indexwriter"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self._docs: _PartFile | None = None
        self._deleted: _PartFile | None = None

    def open(self, spec: WriterSpec, task: int | None, run: str) -> None:
        super().open(spec, task, run)
        self.outpath = Path(spec.params.get("outpath") or self.default_outpath).expanduser()
        self.staging = self.outpath / STAGING / run
        self.part = "part-final" if task is None else f"part-{task:05d}"
        self.run = run
        self.configure(spec.params)

    def destination(self) -> str:
        return str(self.outpath.absolute())

    # ---------------------------------------------------------------- what a subclass says
    def configure(self, params: dict[str, str]) -> None:
        """Read the writer's parameters (a ConfigError naming the writer and the parameter when one is bad)."""

    def header(self) -> bytes:
        """What each part file starts with."""
        return b""

    def record(self, doc: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def bad_param(self, name: str, value: str, want: str) -> ConfigError:
        return ConfigError(f"index writer {self.spec.id}: parameter {name}={value!r} is not {want}; fix it in "
                           "index-writers.xml (indexer.indexwriters.file)")

    # ---------------------------------------------------------------- IndexWriter
    def check(self) -> None:
        try:
            self.outpath.mkdir(parents=True, exist_ok=True)
            probe = self.outpath / f".probe-{uuid.uuid4().hex[:12]}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise ConfigError(f"index writer {self.spec.id}: cannot write to outpath {self.outpath} "
                              f"({e.strerror or e}); set its outpath parameter in index-writers.xml to a folder "
                              "that can be written") from None

    def begin(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def write(self, doc: dict[str, Any]) -> None:
        if self._docs is None:
            self._docs = _PartFile(self.staging, self.part + self.suffix)
            self._docs.write(self.header())
        self._docs.write(self.record(doc))
        failpoints.reach("indexer.file.write")

    def delete(self, doc_id: str) -> None:
        if "!" not in doc_id:  # a bare row key: -reindex deletes these from Solr cores older than crawl ids
            return
        if self._deleted is None:
            self._deleted = _PartFile(self.staging, self.part + DELETED)
        self._deleted.write(doc_id.replace("\n", " ").encode("utf-8") + b"\n")

    def flush(self) -> None:
        """Seal the task's parts (called once, when the task ended well)."""
        for part in (self._docs, self._deleted):
            if part is not None:
                part.seal()
        self._docs = self._deleted = None

    def commit(self) -> None:
        self.flush()
        if not self.staging.is_dir():
            return
        for leftover in self.staging.glob(".*.inprogress"):  # an attempt of a task that was given up
            leftover.unlink(missing_ok=True)
        parts = sorted(p for p in self.staging.iterdir() if p.is_file() and p.name != SUCCESS)
        digest = _digest(parts) if parts else None
        newest = committed_runs(self.outpath)[-1:]
        if digest is None or (newest and _read(newest[0] / SUCCESS) == digest):  # nothing, or committed before a kill
            shutil.rmtree(self.staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.staging.parent.rmdir()
            return
        (self.staging / SUCCESS).write_text(digest + "\n")
        sync_folder(self.staging)
        os.rename(self.staging, self._new_run_folder())
        sync_folder(self.outpath)
        with contextlib.suppress(OSError):  # left while another run stages there
            self.staging.parent.rmdir()

    def close(self) -> None:
        """Release the files; a part not sealed (the task failed) is removed."""
        for part in (self._docs, self._deleted):
            if part is not None:
                part.discard()
        self._docs = self._deleted = None

    def describe(self) -> str:
        return f"{self.spec.id} ({type(self).__name__} into {self.outpath})"

    def _new_run_folder(self) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        folder = self.outpath / f"{stamp}-{self.run}"
        n = 1
        while folder.exists():
            n += 1
            folder = self.outpath / f"{stamp}-{self.run}-{n}"
        return folder


def _digest(parts: list[Path]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.name.encode() + b"\0")
        with open(part, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
