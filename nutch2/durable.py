"""Making a finished file durable under its final name: the folder's entry is synced after a rename, so nothing
refers to a name that a crash could take back (WARC files, index writer files)."""

from __future__ import annotations

import os
from pathlib import Path


def sync_folder(folder: Path) -> None:
    """fsync a folder, making the renames and new entries in it durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
