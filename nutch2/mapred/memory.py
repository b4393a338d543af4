"""The process's heap: freed pages given back to the OS after each job, and few malloc arenas (glibc)."""

from __future__ import annotations

import ctypes
import os
from typing import Any

_M_ARENA_MAX = -8  # mallopt(3)


def _libc() -> Any:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return None


_LIBC = _libc()


def release_memory() -> None:
    """Give the heap's free pages back to the OS (glibc malloc_trim) after a job or phase.

    Python frees a phase's objects, but glibc keeps the freed pages mapped, so the process would stay at the
    high-water mark of its biggest job for the rest of a crawl. No-op on other C libraries.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def limit_arenas() -> None:
    """At most one malloc arena per core (glibc's default is 8 per core): each fetcher or parser thread would
    otherwise get an arena of its own, whose freed chunks stay mapped (~5 MB of a 16-thread fetch). Called
    before a process starts its threads. No-op on other C libraries."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, max(2, os.cpu_count() or 1))


def rss_mb() -> float:
    """This process's resident memory in MB (Linux /proc; 0.0 where it cannot be read)."""
    return rss_bytes() / 2**20


def rss_bytes(pid: int | str = "self") -> int:
    """A process's resident memory in bytes (Linux /proc; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
