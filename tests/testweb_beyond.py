"""The parts of the test web beyond HTML (``TestWeb(beyond_html=True)``, issue 25): three more hosts after all others.

* `docs_host`: ``/`` links to a PDF, DOCX, XLSX, ODT, PPTX and EPUB under ``/docs/`` (made at test time by
  tests/documents.py; each has a title, the author `DOC_AUTHOR`, a unique word and, where the format has links,
  an absolute link to ``/docs/after-<kind>.html``), to ``/docs/scripted.html`` (whose only link,
  ``/docs/scripted-target.html``, is written by a script: `TestWeb.scripted_links`) and to
  ``/docs/cookie/inside.html``, a page that needs a cookie: without the cookie ``nutch2_visit`` it redirects (302) to
  ``/docs/cookie/gate.html``, which sets the cookie and redirects back (followed inline, with a cookie jar, that is
  the page; without one, a loop). robots.txt disallows ``/docs/private/``. Hostile pages for a browser, linked from
  nowhere (`BROWSER_HOSTILE`): a script that never ends, a page that opens windows, navigates away and starts a
  download, and a page whose resources are a robots-disallowed script, an allowed script (``/docs/lib.js``, which
  writes a link to ``/docs/from-lib.html``), an image and a script of another host. `BROWSER_RESOURCES` (linked from
  nowhere): a page that loads three scripts of its own host (``/docs/res/s{i}.js``) and three of host 1
  (``/res/r{i}.js``; Crawl-delay 1 with traps), each writing a link to ``/docs/res/loaded-<name>.html``.
* `basic_host` and `digest_host`: every page but robots.txt needs HTTP Basic (realm `BASIC_REALM`) or Digest
  (MD5, qop=auth, realm `DIGEST_REALM`) authentication with `TestWeb.basic_credentials` / `digest_credentials`;
  without it, 401 with the challenge. ``/`` links to ``/p/1.html`` and ``/p/2.html``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.testweb import TestWeb, _Handler

DOC_AUTHOR = "Ada Lovelace"
BASIC_REALM = "nutch2 basic"
DIGEST_REALM = "nutch2 digest"
COOKIE = "nutch2_visit=granted"
BROWSER_RESOURCES = "/docs/res/spaced.html"
RESOURCE_SCRIPTS = {f"s{i}": f"/docs/res/s{i}.js" for i in range(3)}  # on docs_host
OTHER_HOST_SCRIPTS = {f"r{i}": f"/res/r{i}.js" for i in range(3)}  # on host 1
BROWSER_HOSTILE = {
    "endless_script": "/docs/hostile/endless-script.html",
    "windows": "/docs/hostile/windows.html",
    "resources": "/docs/hostile/resources.html",
}


def build_beyond_html(web: TestWeb) -> None:
    """Add the three hosts' pages to `web` (called by TestWeb._build when beyond_html=True)."""
    from tests.documents import DOCUMENT_TYPES, LINKING_KINDS, DocSpec, make
    from tests.testweb import PageSpec, _html_doc, _Resource

    assert web.docs_host is not None and web.basic_host is not None and web.digest_host is not None
    d = web.docs_host
    u = partial(web.url, d)
    mtime = 1_704_067_200 + 10 * 86400
    web.basic_credentials = ("crawler", "basic-S3cret-pw")
    web.digest_credentials = ("crawler", "digest-S3cret-pw")
    web.documents = {}
    web.scripted_links = {}

    def html_page(host: int, path: str, title: str, links: list[str], body: str = "", check=None,
                  expected: str = "FETCHED") -> PageSpec:
        word = web._next_word()
        anchors = "\n".join(f'<li><a href="{html.escape(x)}">{html.escape(x.rsplit("/", 1)[-1] or "home")}</a></li>'
                            for x in links)
        doc = _html_doc(title, '<meta charset="utf-8">', [f"<p>{title} {word}.</p>", body], anchors).encode()
        spec = PageSpec(web.url(host, path), 200, "html", title, list(links), "utf-8", expected, word,
                        content_type="text/html; charset=utf-8", host_index=host)
        web._mtimes[spec.url] = mtime
        web._add(spec, _Resource(200, spec.content_type, lambda: doc, check=check))
        return spec

    # documents, each linking (where it can) to an HTML page of its own
    links = []
    for kind, (suffix, ctype) in DOCUMENT_TYPES.items():
        after = u(f"/docs/after-{kind}.html")
        html_page(d, f"/docs/after-{kind}.html", f"After the {kind} document", [])
        spec = DocSpec(f"The {kind.upper()} report", DOC_AUTHOR, web._next_word(),
                       after if kind in LINKING_KINDS else None)
        data = make(kind, spec)
        url = u(f"/docs/report{suffix}")
        page = PageSpec(url, 200, "document", spec.title, [after] if spec.link else [], None, "FETCHED", spec.word,
                        content_type=ctype, host_index=d)
        web._mtimes[url] = mtime
        web._add(page, _Resource(200, ctype, lambda b=data: b, conditional=True))
        web.documents[kind] = page
        links.append(url)
    # links written by a script
    target = html_page(d, "/docs/scripted-target.html", "Reached through a script", []).url
    script = ("<script>var a = document.createElement('a'); a.href = '/docs/' + 'scripted-target.html';"
              "a.textContent = 'a link made by script'; document.body.appendChild(a);</script>")
    scripted = html_page(d, "/docs/scripted.html", "Links written by script", [], script).url
    web.scripted_links[scripted] = [target]
    links.append(scripted)
    # a page that needs a cookie
    inside = u("/docs/cookie/inside.html")

    def needs_cookie(h: _Handler) -> tuple[int, dict[str, str]] | None:
        if COOKIE in (h.headers.get("Cookie") or ""):
            return None
        return 302, {"Location": u("/docs/cookie/gate.html")}

    html_page(d, "/docs/cookie/inside.html", "Inside the cookie wall", [], check=needs_cookie)
    web._resources[(d, "/docs/cookie/gate.html")] = _Resource(
        302, "text/html", lambda: b"", location=inside, extra_headers={"Set-Cookie": f"{COOKIE}; Path=/docs/cookie/"})
    links.append(inside)
    html_page(d, "/", "Documents and pages that need a browser", links)
    _browser_hostile(web, d)
    for host, scheme in ((web.basic_host, "basic"), (web.digest_host, "digest")):
        check = _basic(web.basic_credentials) if scheme == "basic" else _Digest(web.digest_credentials)
        pages = [web.url(host, "/p/1.html"), web.url(host, "/p/2.html")]
        for p in pages:
            html_page(host, p.split(str(web.port), 1)[1], f"A {scheme} protected page", [], check=check)
        html_page(host, "/", f"Home of the {scheme} host", pages, check=check)


def _browser_hostile(web: TestWeb, d: int) -> None:
    from tests.testweb import _PNG_1X1, _html_doc, _Resource

    pages = {
        "endless_script": "<p>before the endless script</p><script>while (true) {}</script><p>after</p>",
        "windows": ("<p>a page that opens windows</p><script>for (var i = 0; i < 50; i++) { window.open('/docs/"
                    "after-pdf.html?w=' + i); } setTimeout(function () { location.href = '/docs/hostile/file.bin'; }, "
                    "10);</script><a id='dl' href='/docs/hostile/file.bin' download>file</a>"
                    "<script>document.getElementById('dl').click();</script>"),
        "resources": ("<p>a page with resources</p><script src='/docs/private/secret.js'></script>"
                      "<script src='/docs/lib.js'></script><img src='/docs/pic.png'>"
                      f"<script src='{web.url(0, '/nothing.js')}'></script>"),
    }
    for name, body in pages.items():
        doc = _html_doc(name, '<meta charset="utf-8">', [body], "").encode()
        web._resources[(d, BROWSER_HOSTILE[name])] = _Resource(200, "text/html; charset=utf-8", lambda b=doc: b)
    web._resources[(d, "/docs/hostile/file.bin")] = _Resource(
        200, "application/octet-stream", lambda: b"\x00" * 1024,
        extra_headers={"Content-Disposition": 'attachment; filename="file.bin"'})
    lib = ("var a = document.createElement('a'); a.href = '/docs/from-lib.html'; a.textContent = 'from lib';"
           "document.body.appendChild(a);")
    web._resources[(d, "/docs/lib.js")] = _Resource(200, "application/javascript", lambda: lib.encode())
    web._resources[(d, "/docs/private/secret.js")] = _Resource(200, "application/javascript", lambda: b"1;")
    web._resources[(d, "/docs/pic.png")] = _Resource(200, "image/png", lambda: _PNG_1X1)
    web._resources[(d, "/docs/from-lib.html")] = _Resource(
        200, "text/html", lambda: b"<html><title>from lib</title><body>from lib</body></html>")
    # a page whose resources need politeness: three scripts of its host, three of host 1
    tags = []
    for host, scripts in ((d, RESOURCE_SCRIPTS), (1, OTHER_HOST_SCRIPTS)):
        for name, path in scripts.items():
            js = (f"var a = document.createElement('a'); a.href = '/docs/res/loaded-{name}.html'; "
                  f"a.textContent = 'loaded {name}'; document.body.appendChild(a);").encode()
            web._resources[(host, path)] = _Resource(200, "application/javascript", lambda b=js: b)
            tags.append(f"<script src='{web.url(host, path)}'></script>")
    doc = _html_doc("spaced resources", '<meta charset="utf-8">', ["<p>a page with six scripts</p>", *tags],
                    "").encode()
    web._resources[(d, BROWSER_RESOURCES)] = _Resource(200, "text/html; charset=utf-8", lambda: doc)


def _basic(creds: tuple[str, str]):
    expected = "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()

    def check(h: _Handler) -> tuple[int, dict[str, str]] | None:
        if h.headers.get("Authorization") == expected:
            return None
        return 401, {"WWW-Authenticate": f'Basic realm="{BASIC_REALM}"'}

    return check


class _Digest:
    """RFC 7616 Digest (MD5, qop=auth) for one user: nonces this server issued are accepted."""

    def __init__(self, creds: tuple[str, str]) -> None:
        self.user, self.password = creds
        self.nonces: set[str] = set()

    def __call__(self, h: _Handler) -> tuple[int, dict[str, str]] | None:
        auth = h.headers.get("Authorization") or ""
        if auth.startswith("Digest ") and self._valid(auth[7:], h.command, h.path):
            return None
        nonce = secrets.token_hex(16)
        self.nonces.add(nonce)
        return 401, {"WWW-Authenticate": f'Digest realm="{DIGEST_REALM}", qop="auth", nonce="{nonce}", '
                                         f'opaque="{secrets.token_hex(8)}", algorithm=MD5'}

    def _valid(self, header: str, method: str, path: str) -> bool:
        from urllib.request import parse_http_list, parse_keqv_list

        p = parse_keqv_list(parse_http_list(header))
        if p.get("username") != self.user or p.get("nonce") not in self.nonces or p.get("uri") != path:
            return False

        def md5(s: str) -> str:
            return hashlib.md5(s.encode()).hexdigest()

        ha1 = md5(f"{self.user}:{DIGEST_REALM}:{self.password}")
        ha2 = md5(f"{method}:{path}")
        want = md5(f"{ha1}:{p.get('nonce')}:{p.get('nc')}:{p.get('cnonce')}:{p.get('qop')}:{ha2}")
        return p.get("response") == want
