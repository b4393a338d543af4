"""A fetch stopped (SIGSTOP, Ctrl-Z) and continued (SIGCONT, `fg`) keeps the page it was reading whole: the time
the process was stopped is not the server's slowness, so it does not count against a request's total deadline
(3 x http.timeout: nutch2/mapred/clock.py); nor is it a plugin's slowness, so it does not count against
parser.timeout or indexingfilter.timeout (nutch2/mapred/timebox.py). A server or plugin that is too slow while
the process runs is still cut (tests/test_hostile_http.py, tests/test_plugin_timeouts.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nutch2 import rowkeys
from nutch2.mapred import clock
from tests.crawlutil import conf_for, defines, row, seed_file
from tests.helpers import REPO, nutch2

HALF = 32 * 1024


class _Trickle(BaseHTTPRequestHandler):
    """/page: half the body, then (once `go` is set) the other half."""

    half_sent: threading.Event
    go: threading.Event

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path != "/page":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(2 * HALF))
        self.end_headers()
        self.wfile.write(b"a" * HALF)
        self.wfile.flush()
        self.half_sent.set()
        self.go.wait(60)
        self.wfile.write(b"b" * HALF)
        self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@pytest.fixture
def trickle():
    host = "127.0.2.77"
    handler = type("Trickle", (_Trickle,), {"half_sent": threading.Event(), "go": threading.Event()})
    server = ThreadingHTTPServer((host, _free_port(host)), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, handler
    finally:
        handler.go.set()
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_page_read_while_the_fetch_was_stopped_is_kept_whole(tmp_path: Path, trickle) -> None:
    server, handler = trickle
    url = f"http://127.0.2.77:{server.server_address[1]}/page"
    # a total deadline of 3 x 2 s; the fetch is stopped for 9 s in the middle of the body
    d = defines(tmp_path, "sqlite", **{"http.timeout": 2000, "fetcher.address.allow": "127.0.2.77"})
    assert nutch2("inject", seed_file(tmp_path, url), "-crawlId", "t", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "t", *d).stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, "-crawlId", "t", *d], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert handler.half_sent.wait(120), "the fetch never asked for the page"
        os.killpg(proc.pid, signal.SIGSTOP)  # Ctrl-Z: the fetch and its workers
        time.sleep(0.5)
        handler.go.set()  # the rest of the body arrives while the fetch is stopped
        time.sleep(8.5)
        os.killpg(proc.pid, signal.SIGCONT)  # fg
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out
    page = row(conf_for(tmp_path, "sqlite"), "t", url)
    assert page is not None
    assert rowkeys.TRUNCATED_KEY not in (page.metadata or {}), out
    assert page.content == b"a" * HALF + b"b" * HALF


def test_the_fetch_clock_does_not_count_a_gap_the_process_was_stopped(monkeypatch) -> None:
    clock.now()  # the ticker runs
    monotonic = [1000.0]
    monkeypatch.setattr(clock.time, "monotonic", lambda: monotonic[0])
    monkeypatch.setattr(clock, "_state", (1000.0, 0.0))
    start = clock.now()
    seen = clock._continued[0]
    monotonic[0] += 0.5  # running: time counts
    assert clock.now() == pytest.approx(start + 0.5)
    monotonic[0] += 30.0  # stopped for 30 s: a thread that runs before the ticker sees at most _MAX_GAP pass
    assert clock.now() == pytest.approx(start + clock._MAX_GAP)
    clock._on_sigcont(signal.SIGCONT, None)  # `fg`
    seen = clock._tick(seen)  # the ticker runs again: the gap is not counted, and the clock did not jump back
    assert clock.now() == pytest.approx(start + clock._MAX_GAP)
    for _ in range(20):  # running again, the ticker ticking: time counts
        monotonic[0] += 0.1
        seen = clock._tick(seen)
    assert clock.now() == pytest.approx(start + clock._MAX_GAP + 2.0, abs=1e-6)
    assert clock.to_monotonic(clock.now()) == pytest.approx(monotonic[0])


def test_a_gap_with_no_sigcont_is_a_loaded_machine_and_counts(monkeypatch) -> None:
    """The ticker held off for 30 s by a loaded machine (no SIGCONT came): the time counts, limits end on time."""
    clock.now()
    monotonic = [1000.0]
    monkeypatch.setattr(clock.time, "monotonic", lambda: monotonic[0])
    monkeypatch.setattr(clock, "_state", (1000.0, 0.0))
    start = clock.now()
    seen = clock._continued[0]
    monotonic[0] += 30.0
    clock._tick(seen, confirm=0.0)
    assert clock.now() == pytest.approx(start + 30.0)


def test_the_sigcont_handler_is_set_in_the_main_thread() -> None:
    out = subprocess.run([sys.executable, "-c", "import signal; from nutch2.mapred import clock; "
                          "print(signal.getsignal(signal.SIGCONT) is clock._on_sigcont)"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


_TIMEBOXED = """
import sys, time
from nutch2.mapred import timebox

def work():  # 2 s of the process's running time, in small sleeps (a parse filter at work)
    print("ready", flush=True)  # the plugin's time runs
    for _ in range(40):
        time.sleep(0.05)
    return "done"

try:
    print(timebox.run(work, 5.0, "nutch2-parse-filter"), flush=True)
except timebox.Overrun as e:
    print(f"overrun: {e}", flush=True)
"""


@pytest.mark.slow
def test_time_a_process_was_stopped_does_not_count_against_a_plugins_time_limit() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _TIMEBOXED], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.killpg(proc.pid, signal.SIGSTOP)
        time.sleep(8)  # longer than the plugin's time limit
        os.killpg(proc.pid, signal.SIGCONT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert out.strip() == "done"
