"""Hosts whose pages needed a browser (chromium.mode=auto), remembered in the crawl's store.

When the detector (nutch2/parse/needsjs.py) finds that a page of a host needs rendering, the host is recorded as a
state record beside the table (``render/<scheme>://<host>:<port>``, the store contract's get_state/put_state, so it
works on every store and runner): every later page of that host is rendered without asking the detector, in this
task, the other tasks and every round after, restarts included. A task reads each host's record once (then keeps
the answer) and writes a new one at once (one write per host and crawl). A record that cannot be read or written is
only an optimisation lost: the detector decides again.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from nutch2.fetch.robots import origin_key
from nutch2.stores.base import DataStore

__all__ = ["RENDER_STATE", "RenderHosts", "host_key"]

log = logging.getLogger(__name__)

RENDER_STATE = "render/"  # state records: render/<scheme>://<host>:<port>
_FORMAT = 1


def host_key(url: str) -> str | None:
    """The record name of the URL's host: render/<scheme>://<host>:<port> (robots.txt's origin of it); None for
    a URL without a usable host."""
    key = origin_key(url)
    return None if key is None else f"{RENDER_STATE}{key[0]}://{key[1]}:{key[2]}"


class RenderHosts:
    """The remembered hosts of one crawl, for one task (``store`` None: this task only). Never raises."""

    def __init__(self, store: DataStore | None) -> None:
        self.store = store
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()

    def known(self, url: str) -> bool:
        """Whether the URL's host is rendered from now on."""
        name = host_key(url)
        if name is None:
            return False
        with self._lock:
            if name in self._known:
                return self._known[name]
        found = False
        if self.store is not None:
            try:
                raw = self.store.get_state(name)
                found = raw is not None and json.loads(raw).get("v") == _FORMAT
            except Exception as e:  # noqa: BLE001 - a record is an optimisation: the detector decides instead
                log.warning("chromium.mode=auto: %s could not be read (%s); the detector decides", name, e)
        with self._lock:
            self._known[name] = self._known.get(name, False) or found
            return self._known[name]

    def remember(self, url: str, reason: str) -> bool:
        """Record that the URL's host needs rendering (why: `reason`); True when it was not known before."""
        name = host_key(url)
        if name is None:
            return False
        with self._lock:
            if self._known.get(name):
                return False
            self._known[name] = True
        if self.store is not None:
            value = json.dumps({"v": _FORMAT, "since": int(time.time() * 1000), "url": url, "why": reason},
                               separators=(",", ":"), sort_keys=True)
            try:
                self.store.put_state(name, value)
            except Exception as e:  # noqa: BLE001 - lost: a later task asks the detector again
                log.warning("chromium.mode=auto: %s not written (%s)", name, e)
        log.info("chromium.mode=auto: %s needs rendering (%s): its pages are rendered from now on", name, reason)
        return True
