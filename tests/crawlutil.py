"""Helpers for end-to-end crawl tests: run the CLI in-process, read rows, apply the shipped URL filters."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nutch2.cli import main
from nutch2.config import Configuration
from nutch2.stores import open_store
from nutch2.urls.checker import UrlChecker
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage


def cli(*args: str) -> int:
    """Run `nutch2 <args>` in this process (so the memory store works across commands)."""
    return main([str(a) for a in args])


def seed_file(tmp: Path, *urls: str) -> Path:
    """A seeds.txt in `tmp` listing the URLs."""
    path = tmp / "seeds.txt"
    path.write_text("".join(u + "\n" for u in urls))
    return path


def defines(tmp: Path, backend: str, **props: object) -> list[str]:
    """-D options for a crawl on `backend`: "sqlite" runs with the machine's default runner, "sqlite:local" (or
    :processes, :spark) names one."""
    store, _, framework = backend.partition(":")
    base = {
        "storage.data.store.class": store,
        "mapreduce.framework.name": framework or "auto",
        "storage.data.dir": str(tmp / "crawl"),
        "http.agent.name": "nutch2-test",
        "fetcher.server.delay": 0.1,
        "http.timeout": 5000,
        # the test webs' hosts (tests/testweb.py) are 127.0.1.x: listed for the address guard, as a user lists an
        # intranet's; this machine's services on 127.0.0.1 (Solr, Tika...) stay guarded
        "fetcher.address.allow": "127.0.1.0/24",
    }
    base.update(props)
    out: list[str] = []
    for k, v in base.items():
        out += ["-D", f"{k}={v}"]
    return out


def conf_for(tmp: Path, backend: str, **props: object) -> Configuration:
    d = defines(tmp, backend, **props)
    return Configuration(Path(__file__).resolve().parent.parent / "conf",
                         dict(x.split("=", 1) for x in d[1::2]))


def rows(conf: Configuration, crawl_id: str) -> dict[str, WebPage]:
    with open_store(conf, crawl_id, create=False) as store:
        return {p.key: p for p in store.scan()}


def row(conf: Configuration, crawl_id: str, url: str) -> WebPage | None:
    with open_store(conf, crawl_id, create=False) as store:
        return store.get(reverse_url(url))


def passes_filters(conf: Configuration, url: str) -> bool:
    return UrlChecker(conf, "outlink").check(url) is not None


def kill_after_requests(web: Any, n: int, *args: object) -> int:
    """Start `nutch2 args...` and kill -9 it once the test web (tests/testweb.py) has seen `n` page requests (a
    timed kill point); its exit status."""
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", *map(str, args)], cwd=Path(__file__).parent.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and len([r for r in web.requests() if r.path != "/robots.txt"]) < n:
        time.sleep(0.01)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    return proc.wait()


def round_names(conf: Configuration, crawl_id: str) -> dict[str, str]:
    """Batch ids in generate order -> round1, round2, ... (ids are random; rounds are what must match)."""
    from nutch2.crawldb.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}
