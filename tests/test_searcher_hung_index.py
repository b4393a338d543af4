"""A hung index (a frozen Solr: it takes connections and never answers) holds at most INDEX_WAITING of the server's
worker threads: further searches are 503 at once, and the pages that ask no index answer. Before, 40 waiting
searches took every worker thread, and /crawl waited for the index's timeout as well."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from nutch2.searcher.search import BoundedIndex, IndexBusy
from nutch2.searcher.server import INDEX_WAITING
from tests.crawlutil import defines
from tests.searchapp import SearchServer


class _Hung:
    """A listening socket that takes connections and never answers (a Solr stopped with SIGSTOP)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=200)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._take, daemon=True).start()

    def _take(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


class _Slow:
    name, url = "Solr", "http://solr.test/solr/x"

    def __init__(self) -> None:
        self.release = threading.Event()

    def search(self, req: object) -> str:
        self.release.wait(30)
        return "hits"


def test_at_most_the_limit_waits_on_the_index_and_the_rest_is_busy_at_once() -> None:
    slow = _Slow()
    index = BoundedIndex(slow, 3)  # type: ignore[arg-type]
    with ThreadPoolExecutor(3) as pool:
        waiting = [pool.submit(index.search, None) for _ in range(3)]  # type: ignore[arg-type]
        while index._slots._value:  # type: ignore[attr-defined]  # all three are in
            time.sleep(0.01)
        with pytest.raises(IndexBusy, match="3 requests are already waiting on it"):
            index.search(None)  # type: ignore[arg-type]
        slow.release.set()
        assert [f.result() for f in waiting] == ["hits"] * 3
    assert index.search(None) == "hits"  # type: ignore[arg-type]


@pytest.mark.slow
def test_pages_that_ask_no_index_answer_while_the_index_hangs(tmp_path: Path) -> None:
    hung = _Hung()
    d = defines(tmp_path, "sqlite", **{"searcher.max.connections.per.client": 0})
    try:
        with SearchServer(["-crawlId", "hung", "-solr", f"http://127.0.0.1:{hung.port}/solr/x", *d],
                          tmp_path / "server.log") as server, ThreadPoolExecutor(40) as pool:
            held = len(hung.held)  # the start's ping
            searches = [pool.submit(requests.get, f"{server.url}/search", params={"q": f"w{i}"}, timeout=120)
                        for i in range(40)]
            deadline = time.monotonic() + 60
            while len(hung.held) < held + INDEX_WAITING and time.monotonic() < deadline:
                time.sleep(0.05)
            busy = [f for f in searches if f.done()]
            while len(busy) < 40 - INDEX_WAITING and time.monotonic() < deadline:
                time.sleep(0.05)
                busy = [f for f in searches if f.done()]
            assert len(hung.held) == held + INDEX_WAITING  # no more than that waits on the index
            assert [f.result().status_code for f in busy] == [503] * (40 - INDEX_WAITING)
            assert "Search is unavailable" in busy[0].result().text
            page = requests.get(f"{server.url}/crawl", timeout=60)  # while 16 searches still wait on the index
            assert page.status_code in (200, 503) and "Search is unavailable" not in page.text
            assert sum(not f.done() for f in searches) == INDEX_WAITING
    finally:
        hung.close()
