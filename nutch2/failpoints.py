"""Kill points for crash tests: `NUTCH2_FAILPOINTS="store.flush=7,runner.job=2"` kills this process with SIGKILL
(as `kill -9` would) the 7th time a store batch has been written, or when the 2nd job has ended.

Tests use them to stop a job at an exact point and prove that a rerun of the same command gives the rows of an
uninterrupted run. Unset (always, outside tests), reaching a point costs one test of an empty dict.
"""

from __future__ import annotations

import os
import signal
import threading

_LIMITS: dict[str, int] = {}
for _item in filter(None, os.environ.get("NUTCH2_FAILPOINTS", "").split(",")):
    _name, _, _count = _item.partition("=")
    _LIMITS[_name.strip()] = int(_count or 1)
_seen: dict[str, int] = {}
_lock = threading.Lock()


def reach(name: str) -> None:
    """Count one pass through the point `name`; kill the process when its count is reached."""
    if not _LIMITS or name not in _LIMITS:
        return
    with _lock:
        _seen[name] = _seen.get(name, 0) + 1
        if _seen[name] >= _LIMITS[name]:
            os.kill(os.getpid(), signal.SIGKILL)
