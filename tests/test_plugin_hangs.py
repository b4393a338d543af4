"""A URL filter, normalizer or scoring filter that never returns is named, with the URL it is stuck on
(nutch2/mapred/hangs.py): in one warning line, in the progress line of its job and in the stop line of a command
that does not end, also when it is stuck in a worker process of the processes runner. The sampler reads what the
call sites publish, never another thread's frames."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest

from nutch2.config import Configuration
from nutch2.crawldb.schedule import DefaultFetchSchedule, PluginSchedule
from nutch2.crawldb.scoring import ScoringFilter, ScoringFilters
from nutch2.index.writers import IndexWriter, OpenWriters, WriterSpec
from nutch2.mapred import hangs
from nutch2.mapred.progress import JobProgress
from nutch2.mapred.workers import WorkerPool
from nutch2.urls.filters import URLFilter, URLFilters
from nutch2.urls.normalizers import URLNormalizer, URLNormalizers
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage

STUCK = "http://127.0.1.1:1/p/5.html"
STUCK_KEY = reverse_url(STUCK)


class Blocking(URLFilter, URLNormalizer):
    plugin_id = "blocking:Filter"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def _wait(self, url: str) -> str:
        if url == STUCK:
            self.entered.set()
            self.release.wait(60)
        return url

    def filter(self, url: str) -> str | None:
        return self._wait(url)

    def normalize(self, url: str, scope: str) -> str | None:
        return self._wait(url)


def _stuck_in(call) -> tuple[Blocking, threading.Thread]:
    plugin = Blocking()
    thread = threading.Thread(target=call, args=(plugin,), daemon=True)
    thread.start()
    assert plugin.entered.wait(10)
    return plugin, thread


@pytest.mark.parametrize("point", ["url filter", "url normalizer"])
def test_a_stuck_url_plugin_is_named_with_its_url_until_it_returns(point: str, caplog) -> None:
    def call(plugin: Blocking) -> None:
        if point == "url filter":
            URLFilters([plugin]).filter(STUCK)
        else:
            URLNormalizers([plugin], "outlink").normalize(STUCK)

    plugin, thread = _stuck_in(call)
    t0 = time.monotonic()
    hangs.sample(t0)
    assert not hangs.lines(local_only=True, now=t0 + 1)  # a call is named only once it has lasted
    with caplog.at_level(logging.WARNING, logger="nutch2.mapred.hangs"):
        hangs.sample(t0 + hangs.STUCK_AFTER + 1)
        hangs.sample(t0 + hangs.STUCK_AFTER + 2)  # one warning line per stuck call
    warned = [r.getMessage() for r in caplog.records if r.name == "nutch2.mapred.hangs"]
    assert len(warned) == 1
    assert f"{point} blocking:Filter has not returned" in warned[0] and STUCK in warned[0]
    assert "take it out of plugin.classes" in warned[0]
    [line] = hangs.lines(local_only=True, now=t0 + hangs.STUCK_AFTER + 3)
    assert line.startswith(f"{point} blocking:Filter has not returned for ") and STUCK in line
    plugin.release.set()
    thread.join(10)
    hangs.sample()
    assert not hangs.lines(local_only=True)


def _stuck_line(plugin, call, *args) -> str:
    """call(*args) in a thread until `plugin` is entered: the one line hangs names it by once it has lasted; the
    call is then released and no line is left."""
    thread = threading.Thread(target=call, args=args, daemon=True)
    thread.start()
    assert plugin.entered.wait(10)
    t0 = time.monotonic()
    hangs.sample(t0)
    hangs.sample(t0 + hangs.STUCK_AFTER + 1)
    [line] = hangs.lines(local_only=True, now=t0 + hangs.STUCK_AFTER + 1)
    plugin.release.set()
    thread.join(10)
    hangs.sample()
    assert not hangs.lines(local_only=True)
    return line


class BlockingScoring(ScoringFilter):
    plugin_id = "blocking:Scoring"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def update_score(self, url, page, inlinks) -> None:
        self.entered.set()
        self.release.wait(60)


def test_a_stuck_scoring_filter_is_named_with_its_method_and_url() -> None:
    plugin = BlockingScoring()
    line = _stuck_line(plugin, ScoringFilters([plugin]).update_score, STUCK, WebPage(), [])
    assert line.startswith("scoring filter blocking:Scoring (update_score) has not returned for ") and STUCK in line


class BlockingSchedule(DefaultFetchSchedule):
    plugin_id = "blocking:Schedule"
    max_interval = 90 * 86400

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def should_fetch(self, page, cur_ms) -> bool:
        self.entered.set()
        self.release.wait(60)
        return True


def test_a_stuck_fetch_schedule_is_named_with_its_method_and_url() -> None:
    plugin = BlockingSchedule()
    line = _stuck_line(plugin, PluginSchedule(plugin).should_fetch, WebPage(STUCK_KEY), 0)
    assert line.startswith("fetch schedule blocking:Schedule (should_fetch) has not returned for "), line
    assert STUCK in line and "take it out of plugin.classes" in line


class BlockingWriter(IndexWriter):
    plugin_id = "blocking:Writer"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def write(self, doc) -> None:
        self.entered.set()
        self.release.wait(60)


def test_a_stuck_index_writer_is_named_with_its_method_and_document() -> None:
    plugin = BlockingWriter()
    writers = OpenWriters([(plugin, WriterSpec("mine"))])
    line = _stuck_line(plugin, writers.write, {"id": STUCK})
    assert line.startswith("index writer blocking:Writer (write) has not returned for "), line
    assert STUCK in line


def test_the_progress_line_names_the_stuck_plugin(monkeypatch) -> None:
    plugin, thread = _stuck_in(lambda p: URLFilters([p]).filter(STUCK))
    monkeypatch.setattr(hangs, "STUCK_AFTER", 0.0)
    hangs.sample()
    job = JobProgress("parse", "map", Configuration(None, {}), lambda: 18)
    try:
        assert f"url filter blocking:Filter has not returned for 0 s on {STUCK}" in job.line()
    finally:
        job.close()
        plugin.release.set()
        thread.join(10)
        hangs.sample()


def test_threads_stuck_on_one_call_are_named_once() -> None:
    plugin = Blocking()
    chain = URLFilters([plugin])
    threads = [threading.Thread(target=chain._filter, args=(STUCK,), daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    assert plugin.entered.wait(10)
    t0 = time.monotonic()
    hangs.sample(t0)
    deadline = time.monotonic() + 10
    while len(hangs._seen) < 2 and time.monotonic() < deadline:  # both threads in the filter
        hangs.sample(t0)
    [line] = hangs.lines(local_only=True, now=t0 + hangs.STUCK_AFTER + 1)
    assert line.startswith("url filter blocking:Filter has not returned") and line.endswith("(2 threads)")
    plugin.release.set()
    for t in threads:
        t.join(10)
    hangs.sample()


def _fast_names() -> None:
    hangs.STUCK_AFTER = 0.0  # this worker names a stuck call at once


def _filter_stuck_for_good() -> None:
    URLFilters([Blocking()]).filter(STUCK)


def test_a_url_plugin_stuck_in_a_worker_is_named_in_the_driver() -> None:
    pool = WorkerPool(1, _fast_names, ())
    try:
        pool.submit(_filter_stuck_for_good)
        deadline = time.monotonic() + 60
        while not hangs.lines() and time.monotonic() < deadline:
            time.sleep(0.2)
        [line] = hangs.lines()
        assert f"url filter blocking:Filter has not returned for 0 s on {STUCK}" in line
        assert "url filter blocking:Filter has not returned" in hangs.summary()
    finally:
        pool.shutdown()
        for pid in pool.pids():  # the task never ends: its worker goes with the test
            os.kill(pid, signal.SIGKILL)


def test_the_sampler_reads_no_other_threads_frames() -> None:
    """CPython 3.11 can crash reading the locals of a frame another thread runs (an xdist worker segfaulted in
    `f.f_locals` here), and sys._current_frames() can deadlock with the collector (gh-106883)."""
    import ast
    import inspect

    names = {n.attr for n in ast.walk(ast.parse(inspect.getsource(hangs))) if isinstance(n, ast.Attribute)}
    assert not names & {"_current_frames", "f_locals", "f_back"}


def test_a_call_site_that_returns_leaves_no_call_and_nested_sites_restore_the_outer() -> None:
    class Scoring(ScoringFilter):
        plugin_id = "nesting:Scoring"

        def __init__(self) -> None:
            pass

        def update_score(self, url, page, inlinks) -> None:
            inner = URLFilters([Blocking()])
            assert inner.filter("http://127.0.1.1:1/other") == "http://127.0.1.1:1/other"
            seen.append(hangs.calls[threading.get_ident()])

    seen: list = []
    ScoringFilters([Scoring()]).update_score(STUCK, WebPage(), [])
    [(site, plugin, url, method)] = seen  # back in the scoring filter once the URL filter returned
    assert (site.what, plugin.plugin_id, url, method) == ("scoring filter", "nesting:Scoring", STUCK, "update_score")
    assert threading.get_ident() not in hangs.calls
    URLFilters([Blocking()]).filter(STUCK + "x")
    assert URLFilters([Raising()]).filter(STUCK) is None  # a filter that raises drops the URL
    assert threading.get_ident() not in hangs.calls


class Raising(URLFilter):
    plugin_id = "raising:Filter"

    def __init__(self) -> None:
        pass

    def filter(self, url: str) -> str | None:
        raise RuntimeError("bug")
