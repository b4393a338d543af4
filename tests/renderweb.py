"""A test web of framework skeletons for chromium.mode=auto: one host per kind of page (so that remembering a host
that needed rendering never mixes two kinds), each on its own 127.0.1.x address, all on one port.

`SKELETONS` maps a kind to (page, whether it needs a browser). The pages that need one put their content (a
paragraph with a unique word and a link) into the DOM by script, as React, Vue and a bare loader do; the others
are server-rendered pages with decorative scripts, noscript fallbacks, a widget mount point, Next.js SSR data.
Every host also serves ``/about.html`` (a server-rendered page) and ``/js/<i>.html`` (a small page whose content
is written by script, distinct per i: for the browser pool's memory over hundreds of pages)."""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARTICLE = " ".join(["The harbour town kept its ledgers in the old customs house, where the clerks recorded every "
                    "ship, cargo and toll by hand."] * 6)


def _doc(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>t</title>{head}</head><body>{body}</body></html>"


def _writes(target: str, word: str) -> str:
    """Script code that puts a paragraph with `word` and a link into element `target`."""
    return (f"document.getElementById('{target}').innerHTML = '<h1>App</h1><p>rendered {word} content</p>"
            f"<a href=\"/linked-{word}.html\">more</a>';")


DECORATIVE = ("<script async src='/static/analytics.js'></script>"
              "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}"
              "gtag('js',new Date());gtag('config','UA-1');</script>"
              "<script src='/static/carousel.js'></script>")

SKELETONS: dict[str, tuple[str, bool]] = {
    # create-react-app: an empty root, the content in a bundle, a noscript asking for JavaScript
    "react": (_doc("<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>"
                   "<script src='/static/react-bundle.js'></script>"), True),
    # Vue: an empty #app mounted by an inline script
    "vue": (_doc(f"<div id='app'></div><script>{_writes('app', 'vuequark')}</script>"), True),
    # Angular: <app-root> with a loading text, the content in a script
    "angular": (_doc("<app-root id='ng'>Loading...</app-root>"
                     f"<script>{_writes('ng', 'ngquark')}</script>"), True),
    # a loader: no root, nothing but scripts
    "loader": (_doc("<div id='mount'></div><script src='/static/loader.js'></script>"), True),
    # server HTML with decorative scripts (analytics, a carousel)
    "server": (_doc(f"<h1>Customs house</h1><p>{ARTICLE}</p><a href='/about.html'>about</a>{DECORATIVE}"),
               False),
    # a server page with <noscript> fallbacks: a tracking pixel and a comment widget asking for JavaScript
    "noscript": (_doc(f"<h1>Ledgers</h1><p>{ARTICLE}</p><noscript><img src='/pixel.gif'></noscript>"
                      "<div id='comments'></div><noscript>Please enable JavaScript to view the comments.</noscript>"
                      "<script src='/static/comments.js'></script>"), False),
    # Next.js with server-side rendering: a filled #__next, its data as JSON, its bundles
    "nextssr": (_doc(f"<div id='__next'><h1>Tolls</h1><p>{ARTICLE}</p></div>"
                     "<script id='__NEXT_DATA__' type='application/json'>{\"props\":{}}</script>"
                     "<script src='/_next/main.js'></script><script src='/_next/app.js'></script>"
                     "<script src='/_next/page.js'></script>"), False),
    # a server page leaving a mount point empty for a widget
    "widget": (_doc(f"<h1>Cargo</h1><p>{ARTICLE}</p><div id='app'></div><script src='/static/widget.js'></script>"),
               False),
    # a short static page without scripts
    "static": (_doc("<h1>Contact</h1><p>Write to the harbour master.</p>"), False),
}

SCRIPTS = {
    "/static/react-bundle.js": _writes("root", "reactquark"),
    "/static/loader.js": _writes("mount", "loaderquark"),
    "/static/analytics.js": "window.analyticsLoaded = true;",
    "/static/carousel.js": "document.body.setAttribute('data-carousel', 'on');",
    "/static/comments.js": "document.getElementById('comments').textContent = 'commentquark';",
    "/static/widget.js": "document.getElementById('app').textContent = 'widgetquark';",
    "/_next/main.js": "", "/_next/app.js": "", "/_next/page.js": "",
}
RENDERED_WORDS = {"react": "reactquark", "vue": "vuequark", "angular": "ngquark", "loader": "loaderquark"}


def js_page(i: int) -> str:
    """A small page whose content (a paragraph naming i) is written by script."""
    return _doc(f"<div id='root'></div><script>{_writes('root', f'page{i}quark')}</script>")


class RenderWeb:
    """``with RenderWeb(["react", "server"]) as web: web.url("react", "/")``: one host per kind, on one port."""

    __test__ = False

    def __init__(self, kinds: list[str], first: int = 200) -> None:
        self.kinds = kinds
        self.ips = {k: f"127.0.1.{first + i}" for i, k in enumerate(kinds)}
        self.servers: list[ThreadingHTTPServer] = []
        self.port = 0
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def url(self, kind: str, path: str = "/") -> str:
        return f"http://{self.ips[kind]}:{self.port}{path}"

    def host(self, kind: str) -> str:
        return self.ips[kind]

    def count(self, kind: str, path: str) -> int:
        with self._lock:
            return sum(1 for ip, p in self.log if ip == self.ips[kind] and p == path)

    def _page(self, kind: str, path: str) -> tuple[str, str] | None:
        if path == "/":
            return SKELETONS[kind][0] if kind in SKELETONS else js_page(0), "text/html; charset=utf-8"
        if path == "/about.html":
            return SKELETONS["server"][0], "text/html; charset=utf-8"
        if path.startswith("/js/") and path.endswith(".html") and path[4:-5].isdigit():
            return js_page(int(path[4:-5])), "text/html; charset=utf-8"
        if path in SCRIPTS:
            return SCRIPTS[path], "application/javascript"
        if path == "/robots.txt":
            return "User-agent: *\nAllow: /\n", "text/plain"
        return None

    def __enter__(self) -> RenderWeb:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                ip = self.server.server_address[0]
                kind = next(k for k, a in web.ips.items() if a == ip)
                with web._lock:
                    web.log.append((ip, self.path))
                found = web._page(kind, self.path)
                body = (found[0] if found else "not found").encode("utf-8")
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", found[1] if found else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def server_bind(self) -> None:  # no reverse DNS lookup of the 127.x address
                socketserver.TCPServer.server_bind(self)

        for _attempt in range(20):
            servers: list[ThreadingHTTPServer] = []
            try:
                ips = list(self.ips.values())
                servers.append(Server((ips[0], 0), Handler))
                port = servers[0].server_address[1]
                servers += [Server((ip, port), Handler) for ip in ips[1:]]
            except OSError:
                for s in servers:
                    s.server_close()
                continue
            self.servers, self.port = servers, port
            break
        else:
            raise RuntimeError("could not bind the render web's hosts to one port")
        for s in self.servers:
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.servers:
            s.shutdown()
            s.server_close()
