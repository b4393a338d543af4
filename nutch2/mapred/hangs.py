"""Which plugin a thread is stuck in, and on which URL: for plugins called too often for a time limit of their own
(URL filters and normalizers, scoring filters).

A URL filter or normalizer runs on every outlink, so it is called in the caller's thread (a hand-off to a timed
thread, as `timebox` does for a parser, would cost more than the filter). Python cannot stop a call that never
returns, but it can say where it is: a sampler thread of this process looks at every thread's stack once a second
(`sys._current_frames`), finds the frames of the call sites `watch` registered (the filter chain's loop) and reads
from their locals the plugin being called and the URL. A call seen in the same frame, plugin and URL for
`STUCK_AFTER` seconds is named in one warning line (plugin, URL, the fix); `lines()` names every such call for the
progress line and for the stop line of a command that does not end. Nothing is added to a URL's own path: the
cost is the sampler's, once a second, whatever the number of URLs.

A worker process sends its `lines()` with its reports (nutch2/mapred/workers.py), and the pool is a `source` of
the driver's, so the driver's lines name a plugin stuck in any of its workers.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

log = logging.getLogger(__name__)

STUCK_AFTER = 10.0  # seconds in one call of a plugin before it is named
_PERIOD = 1.0  # seconds between two looks at the threads' stacks


class _Site:
    """A watched call site: its frame's locals name the plugin (`plugin_var`) and the URL (`url_var`)."""

    def __init__(self, what: str, plugin_var: str, url_var: str, hint: Callable[[str], str],
                 detail_var: str | None) -> None:
        self.what, self.plugin_var, self.url_var, self.hint = what, plugin_var, url_var, hint
        self.detail_var = detail_var


_sites: dict[CodeType, _Site] = {}
_sources: list[Callable[[], list[str]]] = []
_lock = threading.Lock()
_seen: dict[int, tuple[FrameType, Any, str, float, bool]] = {}  # thread id: frame, plugin, URL, since, warned
_started = [0]  # pid of the process whose sampler runs


def watch(code: CodeType, what: str, plugin_var: str, url_var: str, hint: Callable[[str], str],
          detail_var: str | None = None) -> None:
    """Frames of `code` call the plugin in their local `plugin_var` on the URL in `url_var` (`what`: "url
    filter"; the local `detail_var`, when given, is named after the plugin: the method called); `hint(plugin
    name)` is the fix a line about it says."""
    _sites[code] = _Site(what, plugin_var, url_var, hint, detail_var)


def start() -> None:
    """Run the sampler in this process (once; again in a forked child)."""
    with _lock:
        if _started[0] == os.getpid():
            return
        _started[0] = os.getpid()
        _seen.clear()
    threading.Thread(target=_loop, name="plugin-hangs", daemon=True).start()


def add_source(fn: Callable[[], list[str]]) -> Callable[[], None]:
    """`fn()` gives lines of stuck calls elsewhere (a worker pool's processes); returns its remover."""
    with _lock:
        _sources.append(fn)

    def remove() -> None:
        with _lock:
            if fn in _sources:
                _sources.remove(fn)

    return remove


def lines(local_only: bool = False, now: float | None = None) -> list[str]:
    """One line per call stuck for STUCK_AFTER seconds or more, in this process (and its sources')."""
    now = time.monotonic() if now is None else now
    with _lock:
        seen = list(_seen.values())
        sources = [] if local_only else list(_sources)
    stuck: dict[tuple[Any, ...], tuple[float, int, FrameType, Any, str]] = {}  # threads stuck on one call: once
    for frame, plugin, url, since, _ in seen:
        if now - since >= STUCK_AFTER:
            key = (frame.f_code, id(plugin), url)
            age, n = stuck[key][:2] if key in stuck else (0.0, 0)
            stuck[key] = (max(age, now - since), n + 1, frame, plugin, url)
    out = [_line(frame, plugin, url, age) + (f" ({n} threads)" if n > 1 else "")
           for age, n, frame, plugin, url in stuck.values()]
    for source in sources:
        try:
            out += source()
        except Exception:  # noqa: BLE001 - a source that cannot answer names nothing
            pass
    return out


def summary() -> str:
    """The stuck calls as one clause ("" when none): for a progress line or a stop line."""
    found = lines()
    return "; ".join(found)


def _name(plugin: Any) -> str:
    return getattr(plugin, "plugin_id", "") or type(plugin).__name__


def _line(frame: FrameType, plugin: Any, url: str, age: float) -> str:
    site = _sites.get(frame.f_code)
    if site is None:
        return f"plugin {_name(plugin)} has not returned for {age:.0f} s on {url}"
    name = _name(plugin)
    detail = frame.f_locals.get(site.detail_var) if site.detail_var else None
    return (f"{site.what} {name}{f' ({detail})' if detail else ''} has not returned for {age:.0f} s on {url} "
            f"({site.hint(name)})")


def sample(now: float | None = None) -> None:
    """Look at every thread's stack once (the sampler calls it; tests call it to step time)."""
    now = time.monotonic() if now is None else now
    found: dict[int, tuple[FrameType, Any, str]] = {}
    enabled = gc.isenabled()
    gc.disable()  # CPython 3.11: a collection started inside sys._current_frames() deadlocks the process (it holds
    try:          # the thread-list lock the collector takes: gh-106883); seen as a crawl hung in Thread.start()
        frames = sys._current_frames()
    finally:
        if enabled:
            gc.enable()
    for tid, frame in frames.items():
        f: FrameType | None = frame
        while f is not None:
            site = _sites.get(f.f_code)
            if site is not None:
                local = f.f_locals
                plugin, url = local.get(site.plugin_var), local.get(site.url_var)
                if plugin is not None and isinstance(url, str):
                    found[tid] = (f, plugin, url)
                break
            f = f.f_back
    warn = []
    with _lock:
        for tid, (f, plugin, url) in found.items():
            old = _seen.get(tid)
            if old is not None and old[0] is f and old[1] is plugin and old[2] == url:
                if not old[4] and now - old[3] >= STUCK_AFTER:
                    _seen[tid] = (*old[:4], True)
                    warn.append((f, plugin, url, now - old[3]))
            else:
                _seen[tid] = (f, plugin, url, now, False)
        for tid in [t for t in _seen if t not in found]:
            del _seen[tid]
    for f, plugin, url, age in warn:
        log.warning(f"{_line(f, plugin, url, age)}: its job waits for it; Ctrl-C stops the job, what was written "
                    "is kept")


def _loop() -> None:
    pid = os.getpid()
    while _started[0] == pid:
        time.sleep(_PERIOD)
        try:
            sample()
        except Exception:  # noqa: BLE001 - the sampler never ends a job
            log.debug("plugin hang sampler failed", exc_info=True)


__all__ = ["STUCK_AFTER", "add_source", "lines", "sample", "start", "summary", "watch"]
