"""The synthetic web: H hosts x P pages of pre-generated HTML served by nginx on 127.77.x.y addresses.

Host i listens on 127.77.(i // 250).(i % 250 + 1) at one port. Page 0 of a host is "/" (index.html),
page n >= 1 is /p/n.html. Every page links to its tree children 16n+1 .. 16n+16 (so every page is reached from
"/" in at most 2 hops when P <= 273), random pages of the same host (up to 16 same-host links), 3 pages of other
hosts (absolute URLs) and one /private/ page that robots.txt disallows. ~20 KB of text per page.
Any URL under /m/ returns a copy of page 1 (for batches larger than the web: the memory benchmark).
The port is fixed per web (cross-host links carry it): $NUTCH2_BENCH_PORT, default 18777. scheme="https" makes the
cross-host links https (a web for Nginx(tls=...), which serves HTTP/2 and HTTP/1.1 over TLS, ALPN choosing).

shape="real" makes a web more like real sites: page sizes spread from 5 to 100 KB (log-uniform), 10 to 200 links
a page (the tree children, then same-host pages, other hosts' pages, and stylesheet, script and image links of
the host's own assets, which nutch2's default URL filter and Scrapy's link extractor both leave out), and nav and
footer blocks repeated on every page of a host, as templates make them.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("NUTCH2_BENCH_CACHE", Path(tempfile.gettempdir()) / "nutch2-bench"))
SAME_HOST_LINKS = 16
CROSS_HOST_LINKS = 3
PAGE_BYTES = 20_000
PORT = int(os.environ.get("NUTCH2_BENCH_PORT", "18777"))


def host_addr(i: int) -> str:
    return f"127.77.{i // 250}.{i % 250 + 1}"


def page_path(n: int) -> str:
    return "/" if n == 0 else f"/p/{n}.html"


@dataclass
class Web:
    hosts: int
    pages: int
    root: Path
    port: int = PORT
    shape: str = "uniform"
    scheme: str = "http"

    @property
    def total(self) -> int:
        return self.hosts * self.pages

    def addrs(self) -> list[str]:
        return [host_addr(i) for i in range(self.hosts)]


def _vocabulary(rng: random.Random, n: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(n)]


def _paragraphs(rng: random.Random, words: list[str], n: int = 400) -> list[str]:
    out = []
    for _ in range(n):
        text = " ".join(rng.choices(words, k=rng.randint(120, 200)))
        out.append(f"<p>{text.capitalize()}.</p>\n")
    return out


def generate_web(hosts: int, pages: int, seed: int = 1, port: int = PORT, shape: str = "uniform",
                 scheme: str = "http") -> Web:
    """Write the web's files once (cached under $NUTCH2_BENCH_CACHE by shape and scheme); return it."""
    if shape not in ("uniform", "real"):
        raise ValueError(f"shape {shape!r}: uniform or real")
    root = CACHE / (f"web-{hosts}x{pages}-s{seed}-p{port}" + ("" if shape == "uniform" else f"-{shape}")
                    + ("" if scheme == "http" else f"-{scheme}"))
    done = root / ".complete"
    web = Web(hosts, pages, root, port, shape, scheme)
    if done.exists():
        return web
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    words = _vocabulary(rng)
    paras = _paragraphs(rng, words)
    robots = "User-agent: *\nDisallow: /private/\n"
    for h in range(hosts):
        addr = host_addr(h)
        hdir = root / addr
        (hdir / "p").mkdir(parents=True)
        (hdir / "robots.txt").write_text(robots)
        if shape == "real":
            _assets(hdir)
            nav = "".join(f'<li><a href="{page_path(rng.randrange(pages))}">{rng.choice(words)}</a></li>'
                          for _ in range(rng.randint(5, 25)))
            footer = " ".join(rng.choices(words, k=rng.randint(30, 120)))
        for n in range(pages):
            if shape == "real":
                html = _real_page(rng, h, n, hosts, pages, port, words, paras, nav, footer, scheme)
            else:
                html = _uniform_page(rng, h, n, hosts, pages, port, paras, scheme)
            name = hdir / ("index.html" if n == 0 else f"p/{n}.html")
            name.write_text(html)
    done.write_text("ok\n")
    return web


def _uniform_page(rng: random.Random, h: int, n: int, hosts: int, pages: int, port: int, paras: list[str],
                  scheme: str = "http") -> str:
    links = [c for c in range(16 * n + 1, 16 * n + 17) if c < pages][:SAME_HOST_LINKS]
    while len(links) < min(SAME_HOST_LINKS, pages - 1):
        c = rng.randrange(pages)
        if c != n and c not in links:
            links.append(c)
    hrefs = [page_path(c) for c in links]
    if hosts > 1:
        for _ in range(CROSS_HOST_LINKS):
            oh = rng.randrange(hosts - 1)
            oh = oh + 1 if oh >= h else oh
            hrefs.append(f"{scheme}://{host_addr(oh)}:{port}{page_path(rng.randrange(pages))}")
    hrefs.append(f"/private/{n}.html")
    return _html(h, n, _body(rng, paras, hrefs, PAGE_BYTES, f" of page {n}"))


def _real_page(rng: random.Random, h: int, n: int, hosts: int, pages: int, port: int, words: list[str],
               paras: list[str], nav: str, footer: str, scheme: str = "http") -> str:
    size = int(5_000 * (20 ** rng.random()))  # 5 KB .. 100 KB, log-uniform
    count = rng.randint(10, 200)
    children = [c for c in range(16 * n + 1, 16 * n + 17) if c < pages]
    hrefs = [page_path(c) for c in children]
    while len(hrefs) < count * 6 // 10:
        hrefs.append(page_path(rng.randrange(pages)) + ("" if rng.random() < 0.8 else f"#s{rng.randrange(9)}"))
    while hosts > 1 and len(hrefs) < count * 8 // 10:
        oh = rng.randrange(hosts - 1)
        oh = oh + 1 if oh >= h else oh
        hrefs.append(f"{scheme}://{host_addr(oh)}:{port}{page_path(rng.randrange(pages))}")
    while len(hrefs) < count - 1:
        hrefs.append(rng.choice(("/static/site.css", "/static/app.js", "/static/logo.png", "/static/print.css")))
    hrefs.append(f"/private/{n}.html")
    head = ('<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js"></script>'
            f'<meta name="description" content="{" ".join(rng.choices(words, k=12))}">')
    body = (f"<nav><ul>{nav}</ul></nav>" + _body(rng, paras, hrefs, size) +
            f'<img src="/static/logo.png" alt="logo"><footer><p>{footer}</p></footer>')
    return _html(h, n, body, head)


def _body(rng: random.Random, paras: list[str], hrefs: list[str], target: int, label: str = "") -> str:
    """Paragraphs up to about `target` bytes carrying the links, the rest of the links after them."""
    body = []
    size = 0
    k = 0
    while size < target - 1500:
        para = paras[rng.randrange(len(paras))]
        if k < len(hrefs):
            para = para.replace("</p>", f' <a href="{hrefs[k]}">link {k}{label}</a></p>', 1)
            k += 1
        body.append(para)
        size += len(para)
    for href in hrefs[k:]:
        body.append(f'<p><a href="{href}">more</a></p>\n')
    return "".join(body)


def _html(h: int, n: int, body: str, head: str = "") -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Host {h} page {n}</title>{head}"
            f"</head>\n<body><h1>Host {h} page {n}</h1>\n{body}</body></html>\n")


def _assets(hdir: Path) -> None:
    static = hdir / "static"
    static.mkdir()
    (static / "site.css").write_text("body { font-family: sans-serif }\n" * 200)
    (static / "print.css").write_text("nav { display: none }\n" * 50)
    (static / "app.js").write_text("function f(x) { return x + 1; }\n" * 300)
    (static / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2000))


class Nginx:
    """nginx as a non-daemon child with its own config in a temp dir, one listen address per host; with `tls`
    (certificate and key files), HTTPS with HTTP/2 on (ALPN: h2 or http/1.1, as the client offers)."""

    def __init__(self, web: Web, access_log: bool = False, workers: int = 1,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.web = web
        self.port = web.port
        self.access_log = access_log
        self.workers = workers
        self.tls = tls
        self.dir = Path(tempfile.mkdtemp(prefix="nutch2-bench-nginx-"))
        self.proc: subprocess.Popen | None = None

    @property
    def log_path(self) -> Path:
        return self.dir / "access.log"

    def url(self, host: int, n: int = 0) -> str:
        return f"{'https' if self.tls else 'http'}://{host_addr(host)}:{self.port}{page_path(n)}"

    def seeds(self) -> list[str]:
        return [self.url(h) for h in range(self.web.hosts)]

    def _config(self) -> str:
        ssl = " ssl http2" if self.tls else ""
        listens = "\n".join(f"    listen {a}:{self.port}{ssl};" for a in self.web.addrs())
        if self.tls:
            listens += (f"\n    ssl_certificate {self.tls[0]};\n    ssl_certificate_key {self.tls[1]};"
                        "\n    ssl_session_cache shared:bench:10m;")
        log = (f"access_log {self.dir}/access.log bench buffer=256k flush=1s;" if self.access_log
               else "access_log off;")
        user = "user root;" if os.geteuid() == 0 else ""
        d = self.dir
        return f"""{user}
worker_processes {self.workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
  log_format bench '$msec $server_addr $status $request_uri';
  {log}
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  open_file_cache max=4000 inactive=60s;  # cached descriptors count against nginx's open-file limit
  client_body_temp_path {d}/tmp-body;
  proxy_temp_path {d}/tmp-proxy;
  fastcgi_temp_path {d}/tmp-fcgi;
  uwsgi_temp_path {d}/tmp-uwsgi;
  scgi_temp_path {d}/tmp-scgi;
  types {{ text/html html; text/plain txt; }}
  default_type application/octet-stream;
  server {{
{listens}
    root {self.web.root}/$server_addr;
    index index.html;
    location /m/ {{ try_files /p/1.html =404; }}
  }}
}}
"""

    def start(self) -> Nginx:
        for host in {0, self.web.hosts - 1}:  # another server on the port would answer for this web (nginx retries
            addr = host_addr(host)           # a taken port for seconds before it exits): refuse before starting
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a listener, not TIME_WAIT, refuses
                try:
                    probe.bind((addr, self.port))
                except OSError as e:
                    raise RuntimeError(f"{addr}:{self.port} is taken ({e.strerror}): another server (a bench web "
                                       "left running?) would answer for this web; stop it") from None
        conf = self.dir / "nginx.conf"
        conf.write_text(self._config())
        self.proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(self.dir), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode(errors='replace')}")
            try:
                with socket.create_connection((host_addr(self.web.hosts - 1), self.port), timeout=0.2):
                    pass
            except OSError:
                time.sleep(0.05)
                continue
            time.sleep(0.2)  # an nginx that could not bind has exited by now: the answer came from another one
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited (port {self.port} is taken by another server?): "
                                   f"{self.proc.stderr.read().decode(errors='replace')[-300:]}")
            return self
        raise RuntimeError("nginx did not start listening in 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: flushes the access log
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
