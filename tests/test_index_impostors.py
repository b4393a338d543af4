"""An index URL that names a server which is not Solr or OpenSearch: one that answers 200 with a web page to
everything, or 500 with a JSON body of another shape. `index` ends in one line naming the URL, and no row is
marked indexed (the server is a small fake on loopback; the real servers' paths are test_solr_index.py and
test_opensearch_index.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nutch2.marks import Mark
from tests.crawlutil import conf_for, defines, rows, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb

CRAWL = "impostor"
ANSWERS = {
    "html": (200, "text/html", b"<html><body>Welcome to our web site</body></html>"),
    "dict": (500, "application/json", json.dumps({"error": "boom"}).encode()),
    "list": (500, "application/json", json.dumps(["x"]).encode()),
}


class _Impostor(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        status, kind, body = ANSWERS[self.server.mode]  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def impostor() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("impostor")
    with TestWeb(hosts=3, pages_per_host=3, traps=False) as web:
        done = nutch2("crawl", seed_file(tmp, web.seed_url), "-crawlId", CRAWL, "-rounds", 1, *defines(tmp, "sqlite"))
    assert done.returncode == 0, done.stderr
    return tmp


@pytest.mark.parametrize("mode", list(ANSWERS))
@pytest.mark.parametrize("engine", ["solr", "opensearch"])
def test_an_index_url_that_is_not_the_engine_fails_in_one_line_and_marks_nothing(
        crawled: Path, impostor: ThreadingHTTPServer, engine: str, mode: str) -> None:
    impostor.mode = mode  # type: ignore[attr-defined]
    base = f"http://127.0.0.1:{impostor.server_address[1]}"
    url = f"{base}/solr/nutch" if engine == "solr" else f"{base}/nutch"
    p = nutch2("index", "-all", "-crawlId", CRAWL, f"-{engine}", url, *defines(crawled, "sqlite"))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert len(lines) == 1 and base in lines[0], p.stderr
    name = "Solr" if engine == "solr" else "OpenSearch"
    assert f"{name} at {base}" in lines[0], lines[0]
    assert not [k for k, page in rows(conf_for(crawled, "sqlite"), CRAWL).items()
                if Mark.INDEX.check(page) or any(m.startswith("_idx") for m in page.markers)]
