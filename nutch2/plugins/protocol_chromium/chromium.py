"""protocol-chromium (Nutch: protocol-selenium): pages that need a browser, rendered in headless Chromium.

A page whose URL matches ``chromium.url.pattern`` (or of a host in ``chromium.hosts``) is first fetched as any page
(the same politeness queue, robots.txt, redirects, content limit); when that gives HTML, Debian's chromium renders it
through the DevTools protocol (websocket-client; no browser or driver is downloaded) and the rendered DOM becomes the
page's content, which parse-html then reads as usual: links written by scripts become outlinks.

The browser itself never touches the network. Every request of the page is paused (CDP Fetch domain) and answered
by the crawler: the document from what the fetcher already has (no second request); each resource the page asks
for (``chromium.resources.types``; a ``chromium.resources.block`` match is refused) only if robots.txt allows it,
fetched by the fetcher's own HTTP protocol (proxy, auth, cookies, content limit) in turn with the pages of its host
(the fetcher's host queues: ``fetcher.server.delay`` or the host's Crawl-delay between two requests), at most
``chromium.resources.max`` per page; everything else fails as blocked. Navigations away from
the page, new windows (``--block-new-web-contents``) and downloads (denied) are blocked and counted, and the browser
is started with ``--proxy-server`` at a closed port, so a request that escaped interception could not go anywhere.

Bounds: ``chromium.pool.size`` browsers per fetch task (one page at a time each, a fresh browser context per page);
``chromium.page.timeout`` seconds per page from the moment it has a browser, for everything of the page: navigation,
scripts, each resource (its fetch time limit is cut to the time left; one that cannot start in time, its host's
politeness considered, is blocked and counted as ``chromium_resources_over_time``) and taking the DOM (the last
quarter of the time, at most 5 s, is kept for it: a script still running then is terminated and the DOM taken as it
is; when even that fails, the fetched HTML is kept and the browser restarted). Closing the page's browser context
takes at most 2 s more. A stop request or the fetcher's time limit (``fetcher.timelimit.mins``) ends the page at
once: it is left for a later fetch, as a request cut in flight is. V8's heap is capped at ``chromium.js.heap.mb``.
A browser is closed and replaced between two pages after ``chromium.recycle.pages`` pages or once the RSS of its
process tree reaches ``chromium.recycle.mb``.

Which pages: ``chromium.mode`` listed (the pattern and hosts above), always (every HTML page) or auto: those listed,
the pages nutch2/parse/needsjs.py finds need a browser, and every page of a host remembered for that in the crawl's
store (nutch2/fetch/renderhosts.py).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.renderhosts import RenderHosts
from nutch2.mapred import affinity, clock, stop
from nutch2.parse.needsjs import NeedsJs
from nutch2.status import ProtocolStatusCode

log = logging.getLogger(__name__)

__all__ = ["BrowserPool", "ChromiumSettings", "Renderer"]

# fetch(url, deadline) -> (ProtocolOutput or None when refused, reason): a resource fetched the crawler's way (robots,
# the host's politeness), started and ended before the deadline (nutch2/mapred/clock.py's now()) or refused
# ("over_time")
ResourceFetch = Callable[[str, float], tuple["ProtocolOutput | None", str]]
Counter = Callable[[str], None]

_HTML = ("text/html", "application/xhtml+xml")
LISTED, AUTO, ALWAYS = "listed", "auto", "always"
MODES = (LISTED, AUTO, ALWAYS)  # chromium.mode
_START_TIMEOUT = 30.0
_MAX_LATE_EVENTS = 1000  # events read after the load window, at most (a page's scripts may never go quiet)
_DOM_RESERVE = 5.0  # at most this many seconds of a page's time are kept for taking its DOM (a quarter of it)
_DISPOSE_TIMEOUT = 2.0  # seconds a browser may take to close a page's context (else it is replaced)
_POLL = 0.2  # seconds between two looks at a stop request while waiting for a browser


class _Cut(Exception):
    """A stop request or the fetcher's time limit ended the page: it is left for a later fetch."""


class ChromiumError(Exception):
    """The browser did not do what was asked in time (or went away)."""


@dataclass(frozen=True)
class ChromiumSettings:
    """The chromium.* properties."""

    pattern: re.Pattern[str] | None
    hosts: frozenset[str]
    pool_size: int
    page_timeout: float
    load_delay: float
    resource_types: frozenset[str]
    block: re.Pattern[str] | None
    max_resources: int
    binary: str
    js_heap_mb: int
    content_limit: int
    mode: str = LISTED
    text_min: int = 300
    scripts_min: int = 3
    recycle_pages: int = 0
    recycle_mb: int = 0

    @classmethod
    def from_conf(cls, conf: Configuration) -> ChromiumSettings | None:
        """The settings, or None when no page is to be rendered (chromium.mode=listed, no pattern, no hosts)."""
        pattern = conf.get_str("chromium.url.pattern").strip()
        hosts = frozenset(h.strip().lower() for h in conf.get_str("chromium.hosts").split(",") if h.strip())
        mode = conf.get_str("chromium.mode").strip().lower() or LISTED
        if mode not in MODES:
            raise ConfigError(f"chromium.mode={mode!r}: give one of {', '.join(MODES)} (listed: the pages "
                              "chromium.url.pattern / chromium.hosts name; auto: those and the pages that need it)")
        if mode == LISTED and not pattern and not hosts:
            return None
        recycle_pages, recycle_mb = conf.get_int("chromium.recycle.pages"), conf.get_int("chromium.recycle.mb")
        for key, value, example in (("chromium.recycle.pages", recycle_pages, 500),
                                    ("chromium.recycle.mb", recycle_mb, 1024)):
            if value < 0:
                raise ConfigError(f"{key}={value} cannot be negative: give 0 (never) or a bound, e.g. "
                                  f"-D {key}={example}")
        try:
            compiled = re.compile(pattern) if pattern else None
            block_text = conf.get_str("chromium.resources.block").strip()
            block = re.compile(block_text) if block_text else None
        except re.error as e:
            raise ConfigError(f"chromium.url.pattern / chromium.resources.block: not a regular expression ({e})"
                              ) from None
        pool = conf.get_int("chromium.pool.size")
        if not 1 <= pool <= 32:
            raise ConfigError(f"chromium.pool.size={pool}: give 1 to 32 browsers per fetch task")
        timeout = conf.get_float("chromium.page.timeout")
        if timeout <= 0:
            raise ConfigError(f"chromium.page.timeout={timeout:g} must be > 0 (seconds)")
        binary = conf.get_str("chromium.binary").strip()
        found = shutil.which(binary) if binary else None
        if not found:
            raise ConfigError(f"chromium.binary={binary!r} is not an executable here; install Debian's chromium "
                              "(apt-get install chromium) or name the binary with -D chromium.binary=PATH")
        try:
            import websocket  # noqa: F401 - websocket-client speaks the DevTools protocol
        except ImportError:
            raise ConfigError("protocol-chromium needs websocket-client: pip install 'nutch2[chromium]'") from None
        types = frozenset(t.strip().lower() for t in conf.get_str("chromium.resources.types").split(",") if t.strip())
        if recycle_mb:
            try:
                import psutil  # noqa: F401 - the browser's memory, over its process tree
            except ImportError:
                raise ConfigError("chromium.recycle.mb needs psutil: pip install 'nutch2[chromium]' "
                                  "(or -D chromium.recycle.mb=0)") from None
        return cls(compiled, hosts, pool, timeout, max(0.0, conf.get_float("page.load.delay")), types, block,
                   conf.get_int("chromium.resources.max"), found, max(16, conf.get_int("chromium.js.heap.mb")),
                   conf.get_int("http.content.limit"), mode, max(0, conf.get_int("chromium.auto.text.min")),
                   max(1, conf.get_int("chromium.auto.scripts.min")), recycle_pages, recycle_mb)

    def applies(self, url: str) -> bool:
        """Whether the page at `url` is rendered whatever its HTML (listed, or chromium.mode=always)."""
        if self.mode == ALWAYS:
            return True
        host = (urlsplit(url).hostname or "").lower()
        return host in self.hosts or (self.pattern is not None and self.pattern.search(url) is not None)


def is_html(out: ProtocolOutput) -> bool:
    """A page the browser can render: a fetched HTML page."""
    mime = (out.content_type or "").split(";", 1)[0].strip().lower()
    sniffed = not mime and b"<html" in out.content[:2048].lower()
    return out.code == ProtocolStatusCode.SUCCESS and (mime in _HTML or sniffed)


_PROFILE = "nutch2-chromium-"  # browser profiles are temporary folders <prefix><pid of the task's process>-<random>


def _remove_stale_profiles() -> None:
    """Delete the profiles of browsers whose task's process was killed (kill -9: the browser died with it, its
    --pdeathsig, and nothing removed the folder). A folder without a pid (an older nutch2's) is left alone."""
    parent = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(_PROFILE)]
    except OSError:
        return
    for name in names:
        pid = name[len(_PROFILE):].split("-", 1)[0]
        if "-" in name[len(_PROFILE):] and pid.isdigit() and not _process_alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


class Browser:
    """One headless chromium process and its DevTools websocket; a reader thread routes answers and events."""

    def __init__(self, settings: ChromiumSettings) -> None:
        import websocket

        self.settings = settings
        _remove_stale_profiles()
        self.profile = tempfile.mkdtemp(prefix=f"{_PROFILE}{os.getpid()}-")
        args = [settings.binary, "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--disable-default-apps", "--disable-component-update", "--metrics-recording-only",
                "--block-new-web-contents", "--deny-permission-prompts", "--disable-dev-shm-usage",
                "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                f"--js-flags=--max-old-space-size={settings.js_heap_mb}",
                "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "about:blank"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
        setpriv = shutil.which("setpriv")
        if setpriv:  # the browser dies with the task, kill -9 included (its renderers follow it)
            args = [setpriv, "--pdeathsig", "KILL", "--", *args]
        with affinity.unpinned():  # the browser's processes on every processor, not on the task's one
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = clock.now() + _START_TIMEOUT
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if self.proc.poll() is not None or clock.now() > deadline:
                self.close()
                raise ChromiumError(f"chromium did not start ({settings.binary})")
            time.sleep(0.05)
        with open(port_file) as f:
            port, path = f.read().split()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", suppress_origin=True, timeout=None)
        self._ids = 0
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        # queue.Queue, not SimpleQueue: SimpleQueue.get(timeout=...) can block for ever (tests/test_layers.py)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.alive = True
        self.pages = 0  # pages rendered (or tried) in this browser
        threading.Thread(target=self._read, name="nutch2-chromium", daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                msg = json.loads(self.ws.recv())
                if "id" in msg:
                    with self._lock:
                        box = self._waiting.pop(msg["id"], None)
                    if box is not None:
                        box.put(msg)
                else:
                    self.events.put(msg)
        except Exception:  # noqa: BLE001 - the browser went away: every waiter fails
            self.alive = False
            with self._lock:
                waiting, self._waiting = self._waiting, {}
            for box in waiting.values():
                box.put({"error": {"message": "browser connection closed"}})
            self.events.put({"method": "_closed"})

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 10.0) -> dict[str, Any]:
        """One DevTools command; its result, ChromiumError on an error or after `timeout` seconds."""
        if not self.alive:
            raise ChromiumError("browser connection closed")
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._ids += 1
            mid = self._ids
            self._waiting[mid] = box
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            self.ws.send(json.dumps(msg))
            answer = box.get(timeout=max(0.01, timeout))
        except queue.Empty:
            with self._lock:
                self._waiting.pop(mid, None)
            raise ChromiumError(f"{method}: no answer within {timeout:g} s") from None
        except Exception as e:  # noqa: BLE001 - a closed socket
            raise ChromiumError(f"{method}: {e}") from None
        if "error" in answer:
            raise ChromiumError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def rss_mb(self) -> float:
        """Resident memory of the browser's process tree (browser, renderers, helpers; shared pages counted in each
        process), in MB; 0 when it is gone."""
        import psutil

        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0.0
        total = 0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    def close(self) -> None:
        self.alive = False
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its renderer and helper processes too
            except OSError:
                pass
            self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


class BrowserPool:
    """At most ``pool_size`` browsers for one fetch task, started when first needed; one page at a time each."""

    def __init__(self, settings: ChromiumSettings) -> None:
        self.settings = settings
        self._idle: queue.Queue[Browser | None] = queue.Queue()
        for _ in range(settings.pool_size):
            self._idle.put(None)  # a slot: a browser is started in it when first needed
        self._all: list[Browser] = []
        self._lock = threading.Lock()
        self.closed = False

    def acquire(self, stop_at: float | None = None) -> Browser | None:
        """A browser (blocks until a slot is free); None for an empty slot the caller must fill. _Cut when a stop is
        requested or ``stop_at`` (clock.now()) passes first."""
        while True:
            if stop.requested() or (stop_at is not None and clock.now() >= stop_at):
                raise _Cut()
            try:
                return self._idle.get(timeout=_POLL)
            except queue.Empty:
                continue

    def start(self) -> Browser:
        browser = Browser(self.settings)
        with self._lock:
            self._all.append(browser)
        return browser

    def release(self, browser: Browser | None) -> bool:
        """Give the slot back: a dead browser is closed and its slot emptied, and so is one recycled after
        ``chromium.recycle.pages`` pages or over ``chromium.recycle.mb`` (True then)."""
        recycled = False
        if browser is not None and browser.alive and browser.proc.poll() is None and not self.closed:
            s = self.settings
            recycled = bool(s.recycle_pages and browser.pages >= s.recycle_pages
                            or s.recycle_mb and browser.rss_mb() >= s.recycle_mb)
        if browser is not None and (recycled or not browser.alive or browser.proc.poll() is not None
                                    or self.closed):
            self._drop(browser)
            browser = None
        self._idle.put(browser)
        return recycled

    def rss_mb(self) -> float:
        """Resident memory of every browser of the pool (each over its process tree), in MB."""
        with self._lock:
            browsers = list(self._all)
        return sum(b.rss_mb() for b in browsers)

    def _drop(self, browser: Browser) -> None:
        browser.close()
        with self._lock:
            if browser in self._all:
                self._all.remove(browser)

    def close(self) -> None:
        self.closed = True
        with self._lock:
            browsers, self._all = self._all, []
        for b in browsers:
            b.close()


class Renderer:
    """Renders fetched HTML pages in the pool's browsers (one Renderer per fetch task, shared by its threads)."""

    def __init__(self, settings: ChromiumSettings, counters: Any, hosts: RenderHosts | None = None) -> None:
        self.settings = settings
        self.pool = BrowserPool(settings)
        self.counters = counters
        self.hosts = hosts if hosts is not None else RenderHosts(None)  # chromium.mode=auto: hosts that need it
        self.detector = NeedsJs(settings.text_min, settings.scripts_min)

    def applies(self, url: str, out: ProtocolOutput) -> str | None:
        """Why the fetched page is rendered ("listed", "always", "host", or the detector's reason in
        chromium.mode=auto), None when it is not. In auto mode a page that needs rendering has its host
        remembered, and the pages of a remembered host are rendered without asking the detector."""
        if not is_html(out):
            return None
        s = self.settings
        if s.applies(url):
            return ALWAYS if s.mode == ALWAYS else LISTED
        if s.mode != AUTO:
            return None
        if self.hosts.known(url):
            self.counters.incr("chromium_auto_host")
            return "host"
        reason = self.detector.reason(out.content)
        if reason is None:
            self.counters.incr("chromium_auto_plain")
            return None
        self.counters.incr("chromium_auto_needed")
        if self.hosts.remember(url, reason):
            self.counters.incr("chromium_auto_hosts_remembered")
        return reason

    def close(self) -> None:
        self.pool.close()

    def render(self, url: str, out: ProtocolOutput, fetch: ResourceFetch,
               stop_at: float | None = None) -> ProtocolOutput:
        """The page with its rendered DOM as content; the fetched page as it was when the browser failed; the
        fetched page marked ``stopped`` when a stop request or ``stop_at`` (the fetcher's time limit) ended it."""
        try:
            browser = self.pool.acquire(stop_at)
        except _Cut:
            return _stopped(out)
        try:
            if browser is None:
                browser = self.pool.start()
            deadline = clock.now() + self.settings.page_timeout
            page = _Page(browser, self.settings, url, out, fetch, self.counters.incr, deadline, stop_at)
            html, truncated = page.render()
            browser.pages += 1
        except _Cut:
            return _stopped(out)
        except ChromiumError as e:
            self.counters.incr("chromium_failed")
            log.warning(f"warning: chromium: {url} not rendered ({e}); its fetched HTML is parsed instead")
            if browser is not None:
                browser.alive = False  # restarted for the next page
            out.headers = {**out.headers, "X-Nutch2-Chromium": f"failed: {e}"[:200]}
            return out
        finally:
            if self.pool.release(browser):
                self.counters.incr("chromium_recycled")
        self.counters.incr("chromium_rendered")
        headers = {k: v for k, v in out.headers.items() if k.lower() not in ("content-length", "content-encoding")}
        headers["Content-Type"] = "text/html; charset=utf-8"
        headers["X-Nutch2-Chromium"] = "rendered"
        # the rendered DOM in place of the fetched body (cut at the content limit when `truncated`)
        return replace(out, content=html, content_type="text/html; charset=utf-8", headers=headers,
                       truncated=truncated or out.truncated, cut="length" if truncated else out.cut)


def _stopped(out: ProtocolOutput) -> ProtocolOutput:
    out.stopped = True
    return out


class _Page:
    """One page in a fresh browser context: navigate, answer its requests, wait, take the DOM, close."""

    def __init__(self, browser: Browser, settings: ChromiumSettings, url: str, out: ProtocolOutput,
                 fetch: ResourceFetch, count: Counter, deadline: float, stop_at: float | None) -> None:
        self.b = browser
        self.deadline = deadline  # everything of the page ends here
        self.stop_at = stop_at  # the fetcher's time limit: the page is cut there
        self.load_until = deadline - min(_DOM_RESERVE, settings.page_timeout / 4)  # then the DOM is taken
        self.s = settings
        self.url = url
        self.out = out
        self.fetch = fetch
        self.count = count
        self.session = ""
        self.frame = ""
        self.served_document = False
        self.resources = 0

    def render(self) -> tuple[bytes, bool]:
        b = self.b
        context = b.call("Target.createBrowserContext", {"disposeOnDetach": True},
                         timeout=self._left())["browserContextId"]
        try:
            b.call("Browser.setDownloadBehavior", {"behavior": "deny", "browserContextId": context},
                   timeout=self._left())
            target = b.call("Target.createTarget", {"url": "about:blank", "browserContextId": context},
                            timeout=self._left())["targetId"]
            self.session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                  timeout=self._left())["sessionId"]
            self._drain_stale()
            for method, params in (("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
                                   ("Page.enable", {}), ("Runtime.enable", {})):
                b.call(method, params, self.session, timeout=self._left())
            self._navigate()
            self._pump(self.load_until, until_load=True)
            self._pump(min(self.load_until, clock.now() + self.s.load_delay), until_load=False)
            self._cut_waiting()
            return self._dom()
        finally:
            try:
                b.call("Target.disposeBrowserContext", {"browserContextId": context}, timeout=_DISPOSE_TIMEOUT)
            except ChromiumError:
                b.alive = False  # a browser that cannot drop a context is not reused

    def _left(self) -> float:
        """Seconds left until the page's deadline; ChromiumError when none are, _Cut on a stop."""
        self._check()
        left = self.deadline - clock.now()
        if left <= 0:
            raise ChromiumError(f"chromium.page.timeout ({self.s.page_timeout:g} s) reached")
        return left

    def _check(self) -> None:
        """_Cut when a stop was requested or the fetcher's time limit passed."""
        if stop.requested() or (self.stop_at is not None and clock.now() >= self.stop_at):
            raise _Cut()

    def _navigate(self) -> None:
        """Page.navigate answers only once the document request was answered: send it, serve, then read it."""
        b = self.b
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        with b._lock:
            b._ids += 1
            mid = b._ids
            b._waiting[mid] = box
        b.ws.send(json.dumps({"id": mid, "method": "Page.navigate", "params": {"url": self.url},
                              "sessionId": self.session}))
        while clock.now() < self.load_until:
            self._check()
            try:
                answer = box.get_nowait()
            except queue.Empty:
                self._one_event(0.05)
                continue
            if "error" in answer:
                raise ChromiumError(f"Page.navigate: {answer['error'].get('message')}")
            self.frame = answer.get("result", {}).get("frameId", "") or self.frame
            return
        with b._lock:
            b._waiting.pop(mid, None)
        raise ChromiumError("Page.navigate: no answer within chromium.page.timeout")

    def _drain_stale(self) -> None:
        while True:
            try:
                self.b.events.get_nowait()
            except queue.Empty:
                return

    def _pump(self, until: float, until_load: bool) -> None:
        """Handle the page's events until `until` (or its load event, with until_load)."""
        while clock.now() < until:
            self._check()
            method = self._one_event(min(0.1, max(0.0, until - clock.now())))
            if until_load and method == "Page.loadEventFired":
                return

    def _cut_waiting(self) -> None:
        """The load window is over: requests the page made that were not answered yet (they waited behind a
        resource whose host's turn took the window) are over time, counted and failed, not left hanging. A page
        whose scripts never go quiet is cut after _MAX_LATE_EVENTS events or half the time left, whichever comes
        first: the rest is the DOM's (requests still waiting then are neither counted nor failed one by one: they
        end with the page's browser context)."""
        until = clock.now() + max(0.0, self.deadline - clock.now()) / 2
        for _ in range(_MAX_LATE_EVENTS):
            if clock.now() >= until or self._one_event(0.0) is None:
                return

    def _one_event(self, wait: float) -> str | None:
        try:
            ev = self.b.events.get(timeout=max(0.001, wait))
        except queue.Empty:
            return None
        method = ev.get("method")
        if method == "_closed":
            raise ChromiumError("the browser went away")
        if ev.get("sessionId") not in (None, self.session):
            return method
        params = ev.get("params", {})
        if method == "Fetch.requestPaused":
            self._paused(params)
        elif method == "Page.windowOpen":
            self.count("chromium_windows_blocked")
        elif method in ("Page.downloadWillBegin", "Browser.downloadWillBegin"):
            self.count("chromium_downloads_blocked")
        return method

    def _fail(self, rid: str, reason: str = "BlockedByClient") -> None:
        try:
            self.b.call("Fetch.failRequest", {"requestId": rid, "errorReason": reason}, self.session,
                        timeout=self._left())
        except ChromiumError:
            pass

    def _fulfill(self, rid: str, status: int, ctype: str | None, body: bytes) -> None:
        headers = [{"name": "Content-Type", "value": ctype}] if ctype else []
        self.b.call("Fetch.fulfillRequest", {"requestId": rid, "responseCode": status, "responseHeaders": headers,
                                             "body": base64.b64encode(body).decode("ascii")}, self.session,
                    timeout=self._left())

    def _paused(self, p: dict[str, Any]) -> None:
        rid = p["requestId"]
        req = p.get("request", {})
        url = req.get("url", "")
        kind = str(p.get("resourceType", "")).lower()
        if kind == "document" and not self.served_document:
            self.served_document = True  # the page itself: what the fetcher already has, no second request
            self.frame = p.get("frameId") or self.frame
            self._fulfill(rid, 200, self.out.content_type or "text/html", self.out.content)
            return
        if kind == "document" and p.get("frameId") == self.frame:
            self.count("chromium_navigations_blocked")  # the page sends the browser elsewhere (or a download)
            self._fail(rid, "Aborted")
            return
        if req.get("method", "GET") != "GET" or not url.startswith(("http://", "https://")):
            self.count("chromium_resources_blocked")
            self._fail(rid)
            return
        if kind not in self.s.resource_types or (self.s.block is not None and self.s.block.search(url)):
            self.count("chromium_resources_blocked")
            self._fail(rid)
            return
        if 0 <= self.s.max_resources <= self.resources:
            self.count("chromium_resources_over_limit")
            self._fail(rid)
            return
        if clock.now() >= self.load_until:
            self.count("chromium_resources_over_time")  # asked for after the load window, or seen after it
            self._fail(rid)
            return
        self.resources += 1
        out, reason = self.fetch(url, self.load_until)
        self._check()  # a fetch cut by a stop is no answer
        if out is None:
            self.count(f"chromium_resources_{reason}")
            self._fail(rid)
            return
        self.count("chromium_resources_fetched")
        status = out.http_code or 502
        if out.code == ProtocolStatusCode.EXCEPTION:
            self._fail(rid, "Failed")
        else:
            self._fulfill(rid, status, out.content_type, out.content)

    def _dom(self) -> tuple[bytes, bool]:
        """The rendered document; a script still running at its time is terminated first (all before the deadline)."""
        expr = {"expression": "document.documentElement ? document.documentElement.outerHTML : ''",
                "returnByValue": True}
        left = self._left()
        try:
            result = self.b.call("Runtime.evaluate", expr, self.session, timeout=left * 0.4)
        except ChromiumError:
            self.count("chromium_scripts_terminated")
            self.b.call("Runtime.terminateExecution", {}, self.session, timeout=self._left() / 3)
            result = self.b.call("Runtime.evaluate", expr, self.session, timeout=self._left())
        html = str(result.get("result", {}).get("value") or "")
        data = ("<!DOCTYPE html>\n" + html).encode("utf-8")
        limit = self.s.content_limit
        if 0 <= limit < len(data):
            return data[:limit], True
        return data, False
