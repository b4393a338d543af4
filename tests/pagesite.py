"""A small static site on a loopback address: given pages (path -> HTML) served by a stdlib HTTP server, for the
plugin tests that need pages of their own (fields to extract, texts in several languages)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class PageSite:
    """``with PageSite({"/": html, ...}) as site: site.url("/")``; robots.txt and unknown paths answer 404.
    A page given as (html, headers) is served with those extra response headers, (html, headers, status) with
    that status too (a redirect: {"Location": url}, 301)."""

    __test__ = False

    def __init__(self, pages: dict[str, str | tuple[str, dict[str, str]] | tuple[str, dict[str, str], int]],
                 host: str = "127.0.0.1") -> None:
        self.pages = pages
        self.host = host
        self.server: ThreadingHTTPServer | None = None

    def url(self, path: str) -> str:
        assert self.server is not None
        return f"http://{self.host}:{self.server.server_address[1]}{path}"

    def __enter__(self) -> PageSite:
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                page = pages.get(self.path)
                if page is None:
                    self.send_error(404)
                    return
                html, headers, status = (*page, 200)[:3] if isinstance(page, tuple) else (page, {}, 200)
                body = html.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
