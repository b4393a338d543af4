"""A hostile client against `nutch2 server` over real sockets: every row of the probe of issue 22 is refused with
the right status, and nothing is started or read (DNS rebinding with forged Host and Origin, Solr local params,
cross-site form posts, deep JSON, slow headers and bodies, huge headers, 50 MB header blocks in a WARC), plus
login and TLS. The server runs as a user starts it, as a child process, with the job API on."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from nutch2.index.solr import SolrClient
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows
from tests.searchapp import SOLR, SearchServer, require_solr, serving

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "hostile"
OTHER = "hostile_other"
SECRET = "quixsecretzor"  # a word only the other crawl's document has
MINE = "quixminezor"  # a word only this crawl's document has
ARCHIVE = "http://archive.hostile.test"
BIG_HEADER = 50 * 1024 * 1024  # one header line of 50 MB (the probe's): the fetcher refuses lines over 64 KiB


def _warc(path: Path) -> None:
    """Responses a fetch would refuse (101 header fields; a 50 MB header line) and a redirect whose Location has
    credentials."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    html = f"<html><head><title>Mine</title></head><body><p>{MINE}</p></body></html>".encode()
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)

        def response(url: str, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), length=len(body),
                                                http_headers=http,
                                                warc_headers_dict={"WARC-Date": "2024-05-06T07:08:09Z"}))

        response(f"{ARCHIVE}/page.html", "200 OK", [("Content-Type", "text/html")], html)
        response(f"{ARCHIVE}/many.html", "200 OK",
                 [("Content-Type", "text/html")] + [(f"X-H{i}", "v") for i in range(100)], html)
        response(f"{ARCHIVE}/huge.html", "200 OK", [("Content-Type", "text/html"), ("X-Big", "v" * BIG_HEADER)],
                 html)
        response(f"{ARCHIVE}/moved", "302 Found", [("Location", "http://ann:hunter2@archive.hostile.test/page.html")],
                 b"")


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def crawl(tmp: Path) -> list[str]:
    """The crawl from a WARC (parsed, updated, indexed), and a document of another crawl in the same core."""
    solr = require_solr()
    d = defines(tmp, "sqlite")
    _warc(tmp / "h.warc.gz")
    out = subprocess.run([sys.executable, "-m", "nutch2.cli", "warcimport", str(tmp / "h.warc.gz"), "-crawlId",
                          CRAWL, *d], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "skipped_headers_too_large=2" in out.stderr and "imported=2" in out.stderr
    batch = out.stdout.strip()
    for step in ("parse", "updatedb"):
        assert cli(step, batch, "-crawlId", CRAWL, *d) == 0
    assert cli("index", batch, "-crawlId", CRAWL, "-solr", solr, *d) == 0
    requests.post(f"{solr}/update?commit=true", json=[{"id": f"{OTHER}!com.test.other:http/", "crawlId": OTHER,
                                                       "url": "http://other.test/", "host": "other.test",
                                                       "title": "other", "content": SECRET}],
                  timeout=30).raise_for_status()
    return d


@pytest.fixture(scope="module")
def files(tmp: Path) -> Path:
    """The server's files folder (server.files.dir): seeds the job API may name, and where jobs write."""
    folder = tmp / "files"
    (folder / "seeds").mkdir(parents=True)
    (folder / "seeds" / "s.txt").write_text(f"{ARCHIVE}/from-the-files-folder.html\n")
    (folder / "taken").write_text("a file where a job would want a folder\n")
    return folder


@pytest.fixture(scope="module")
def server(crawl: list[str], tmp: Path, files: Path):
    args = ["-crawlId", CRAWL, "-solr", SOLR, "-jobs", *crawl, "-D", "searcher.header.timeout=1",
            "-D", "searcher.body.timeout=1", "-D", "searcher.max.connections=50", "-D", f"server.files.dir={files}"]
    with SearchServer(args, tmp / "server.log") as s:
        yield s
    requests.post(f"{SOLR}/update?commit=true", json={"delete": {"query": f"crawlId:({CRAWL} OR {OTHER})"}},
                  timeout=30)


def port(server: SearchServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def jobs(server: SearchServer) -> list[Any]:
    return requests.get(f"{server.url}/api/jobs", timeout=30).json()["jobs"]


def raw(server: SearchServer, data: bytes, wait: float = 10.0) -> bytes:
    """Send bytes on a fresh connection; what the server answers before it closes (or `wait` passes)."""
    with socket.create_connection(("127.0.0.1", port(server)), timeout=wait) as sock:
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return out


def test_warcimport_stores_no_header_block_a_fetch_would_refuse_and_no_credentials(server: SearchServer,
                                                                                   tmp: Path) -> None:
    table = rows(conf_for(tmp, "sqlite"), CRAWL)
    assert set(table) == {reverse_url(f"{ARCHIVE}/page.html"), reverse_url(f"{ARCHIVE}/moved")}
    moved = table[reverse_url(f"{ARCHIVE}/moved")]
    assert moved.headers["Location"] == f"{ARCHIVE}/page.html" and list(moved.outlinks) == [f"{ARCHIVE}/page.html"]
    info = requests.get(f"{server.url}/info", params={"url": f"{ARCHIVE}/moved"}, timeout=30)
    assert info.status_code == 200 and "hunter2" not in info.text and "ann:" not in info.text
    assert requests.get(f"{server.url}/info", params={"url": f"{ARCHIVE}/huge.html"}, timeout=30).status_code == 404


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}",
                                  "localhost.:{port}@evil.example", "[::2]:{port}"])
def test_rebinding_a_forged_host_is_421_and_nothing_is_read_or_started(server: SearchServer, host: str) -> None:
    forged = {"Host": host.format(port=port(server))}
    page = f"{ARCHIVE}/page.html"
    before = jobs(server)
    for method, path, body in (("GET", f"/api/page?url={page}", None), ("GET", f"/cached/raw?url={page}", None),
                               ("GET", "/", None), ("GET", "/search/", None),
                               ("POST", "/api/jobs", {"type": "inject", "args": {"seedUrls": ["http://x.test/"]}})):
        r = requests.request(method, server.url + path, headers=forged, json=body, timeout=30,
                             allow_redirects=False)
        assert r.status_code == 421, (host, path, r.status_code)
        assert MINE not in r.text and "location" not in r.headers and host.split(":")[0] not in r.text
    assert jobs(server) == before  # nothing started
    # no Host at all, and two of them, on a raw socket
    for head in (b"GET /api/stats HTTP/1.1\r\n",
                 b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"):
        answer = raw(server, head + b"Connection: close\r\n\r\n")
        assert answer.startswith((b"HTTP/1.1 421", b"HTTP/1.1 400")), answer[:60]


def test_origins_of_other_sites_are_403_and_start_nothing(server: SearchServer) -> None:
    job = {"type": "inject", "args": {"seedUrls": ["http://x.test/"]}}
    p = port(server)
    before = jobs(server)
    for origin in ("http://evil.example", f"http://evil.example:{p}", f"http://127.0.0.1:{p + 1}",
                   f"https://127.0.0.1:{p}", "null", "file://", "x"):
        r = requests.post(f"{server.url}/api/jobs", json=job, headers={"Origin": origin}, timeout=30)
        assert r.status_code == 403, origin
    r = requests.post(f"{server.url}/api/jobs", json=job, headers={"Sec-Fetch-Site": "cross-site"}, timeout=30)
    assert r.status_code == 403
    r = requests.get(f"{server.url}/api/page", params={"url": f"{ARCHIVE}/page.html"},
                     headers={"Origin": "http://evil.example"}, timeout=30)
    assert r.status_code == 403 and MINE not in r.text
    assert jobs(server) == before  # nothing started
    # our own origin is fine (what the app's own pages would send)
    ok = requests.post(f"{server.url}/api/jobs", json={"type": "fetch", "args": {"batch": "1-2"}},
                       headers={"Origin": f"http://localhost:{p}", "Host": f"localhost:{p}"}, timeout=30)
    assert ok.status_code == 201, ok.text


def test_cross_site_form_posts_are_415(server: SearchServer) -> None:
    before = len(jobs(server))
    for ctype, data in (("application/x-www-form-urlencoded", "type=inject"), ("text/plain", '{"type": "inject"}'),
                        ("multipart/form-data; boundary=x", "--x\r\n\r\n--x--")):
        for path in ("/api/jobs", "/api/jobs/hostile-fetch-1/stop"):
            r = requests.post(server.url + path, data=data, headers={"Content-Type": ctype}, timeout=30)
            assert r.status_code == 415, (ctype, path)
    assert requests.post(f"{server.url}/api/jobs", data=b"{}", timeout=30).status_code == 415  # no type at all
    assert len(jobs(server)) == before


@pytest.mark.parametrize("q", [f"{{!join from=id to=id fromIndex=nutch}}{SECRET}",
                               "{!join from=crawlId to=crawlId}*:*",
                               f"{{!rerank reRankQuery=$q reRankDocs=1000}}{SECRET}", "{!rerank reRankQuery=$q}",
                               f'_query_:"{{!lucene}}{SECRET}"', f"{{!lucene}}{SECRET}",
                               f"{{!edismax qf=content}}{SECRET}", f"{SECRET}", f"crawlId:{OTHER}", f"id:{OTHER}*",
                               '_val_:"sum(1,1)"',
                               f"{{!frange l=0}}{SECRET}", "{!parent which=*:*}", f"content:{SECRET}"])
def test_queries_carry_no_local_params_and_reach_no_other_crawl(server: SearchServer, q: str) -> None:
    r = requests.get(f"{server.url}/api/search", params={"q": q}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["numFound"] == 0 and r.json()["hits"] == [] and "other.test" not in r.text
    assert requests.get(f"{server.url}/search", params={"q": q}, timeout=30).status_code == 200


def test_the_crawls_own_words_are_found(server: SearchServer) -> None:
    hits = requests.get(f"{server.url}/api/search", params={"q": MINE}, timeout=30).json()["hits"]
    assert [h["url"] for h in hits] == [f"{ARCHIVE}/page.html"]
    assert requests.get(f"{server.url}/api/search", params={"q": "x", "host": "a}{!join"}, timeout=30
                        ).status_code == 400


def test_deep_json_is_400_not_500(server: SearchServer) -> None:
    for body in (b"[" * 30000 + b"]" * 30000, b'{"type": ' + b"[" * 40 + b"]" * 40 + b"}"):
        r = requests.post(f"{server.url}/api/jobs", data=body, headers={"Content-Type": "application/json"},
                          timeout=30)
        assert r.status_code == 400 and "deeper than 32" in r.json()["error"]
    assert requests.get(f"{server.url}/api/stats", timeout=30).status_code == 200


def test_bodies_too_big_or_too_slow_are_413_and_408(server: SearchServer) -> None:
    head = (f"POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1:{port(server)}\r\nContent-Type: application/json\r\n"
            "Content-Length: {n}\r\n\r\n")
    assert raw(server, head.format(n=100_000_000).encode()).startswith(b"HTTP/1.1 413")  # refused unread
    assert raw(server, head.format(n=100).encode() + b'{"type": ', wait=20).startswith(b"HTTP/1.1 408")

    def chunks():
        for _ in range(64):
            yield b" " * 16384

    r = requests.post(f"{server.url}/api/jobs", data=chunks(), headers={"Content-Type": "application/json"},
                      timeout=30)
    assert r.status_code == 413
    assert jobs(server) == [] or all(j["type"] == "fetch" for j in jobs(server))


def _from(source: str, server: SearchServer) -> socket.socket:
    """A connection to the server from a source address of its own (127.x.y.z: another client)."""
    return socket.create_connection(("127.0.0.1", port(server)), timeout=20, source_address=(source, 0))


def test_slow_and_huge_headers_are_cut(server: SearchServer) -> None:
    # idle connections and a client that trickles its headers: cut after searcher.header.timeout (1 s here)
    idle = [_from(f"127.0.5.{i + 1}", server) for i in range(30)]
    slow = socket.create_connection(("127.0.0.1", port(server)), timeout=20)
    slow.sendall(f"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1:{port(server)}\r\n".encode())
    answer = b""
    try:
        for i in range(100):  # up to 20 s of one header line every 0.2 s
            try:
                slow.sendall(f"X-Slow-{i}: x\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.2)
        answer = slow.recv(65536)
    except (TimeoutError, ConnectionResetError):
        pass
    finally:
        slow.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    try:
        # meanwhile the server answers everyone else
        assert requests.get(f"{server.url}/api/stats", timeout=30).status_code == 200
        for sock in idle:
            assert sock.recv(1) == b""  # closed by the server, not by us
    finally:
        for sock in idle:
            sock.close()
    # a header block far beyond what a client needs: refused, not read into memory
    huge = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port(server)}\r\nX-Big: ".encode() + b"v" * (50 * 1024 * 1024)
    with socket.create_connection(("127.0.0.1", port(server)), timeout=20) as sock:
        sent = 0
        try:
            for i in range(0, len(huge), 1 << 20):
                sock.sendall(huge[i:i + (1 << 20)])
                sent = i
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            answer = sock.recv(65536)
        except ConnectionResetError:
            answer = b""
    assert sent < len(huge) - (1 << 20) or answer.startswith(b"HTTP/1.1 400"), (sent, answer[:80])
    assert requests.get(f"{server.url}/api/stats", timeout=30).status_code == 200


def test_one_client_cannot_hold_every_connection(server: SearchServer) -> None:
    """300 half-sent requests from one address, renewed as they are cut: that client holds at most
    searcher.max.connections.per.client (16) connections; every other client is served meanwhile."""
    held: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(300):
            sock = _from("127.0.6.1", server)
            sock.sendall(b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
            held.append(sock)
        time.sleep(0.3)
        for sock in held:
            sock.settimeout(0.05)
            try:
                if sock.recv(200).startswith(b"HTTP/1.1 503"):
                    refused += 1
            except TimeoutError:
                pass
        assert refused >= 300 - 16, refused
        for i in range(20):  # other clients, while those are held
            assert requests.get(f"{server.url}/api/stats", timeout=10).status_code == 200, i
    finally:
        for sock in held:
            sock.close()


def test_errors_name_no_paths_urls_or_hosts(server: SearchServer, tmp: Path) -> None:
    for path in ("/search/", "/nowhere", "/api/nowhere", "/static/../conf/x"):
        r = requests.get(server.url + path, timeout=30, allow_redirects=False)
        assert r.status_code == 404 and "location" not in r.headers, path
        assert str(tmp) not in r.text and SOLR not in r.text
    r = requests.post(f"{server.url}/api/jobs", data="{nope", headers={"Content-Type": "application/json"},
                      timeout=30)
    assert r.status_code == 400 and str(tmp) not in r.text


# ------------------------------------------------------------------------------------------- login and TLS


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM), made here with cryptography."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_login_and_tls_over_a_real_socket(crawl: list[str], tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    users = tmp / "users"
    add = subprocess.run([sys.executable, "-m", "nutch2.cli", "server", "-users", str(users), "-addUser", "ann"],
                         input="correct horse\n", capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    assert users.read_text().startswith("ann:scrypt$") and "horse" not in users.read_text()
    token = "t0ken-" + "x" * 30
    (tmp / "token").write_text(token + "\n")
    cert, key = _self_signed(tmp)
    args = ["-crawlId", CRAWL, "-solr", SOLR, *crawl, "-users", str(users), "-tokenFile", str(tmp / "token"),
            "-sslCert", str(cert), "-sslKey", str(key)]
    with SearchServer(args, tmp / "server-tls.log") as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert "login: token, 1 user)" in server.output()
        get = lambda path, **kw: requests.get(server.url + path, verify=str(cert), timeout=30, **kw)  # noqa: E731
        for path in ("/", "/api/stats", "/static/style.css", f"/api/page?url={ARCHIVE}/page.html"):
            r = get(path)
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Basic realm="), path
            assert MINE not in r.text
        assert get("/api/stats", auth=("ann", "wrong horse")).status_code == 401
        assert get("/api/stats", auth=("bob", "correct horse")).status_code == 401
        assert get("/api/stats", headers={"Authorization": "Bearer " + token[:-1]}).status_code == 401
        assert get("/api/stats", auth=("ann", "correct horse")).json()["total"] == 2
        r = get("/api/search", params={"q": MINE}, headers={"Authorization": f"Bearer {token}"})
        assert [h["url"] for h in r.json()["hits"]] == [f"{ARCHIVE}/page.html"]
        # the same port without TLS gets no page
        plain = server.url.replace("https://", "http://")
        try:
            answer = requests.get(plain + "/api/stats", auth=("ann", "correct horse"), timeout=30)
            assert answer.status_code == 400 and MINE not in answer.text
        except requests.ConnectionError:
            pass
    # not loopback: a login, or -insecure said out loud
    capsys.readouterr()
    assert cli("server", "-crawlId", CRAWL, "-solr", SOLR, "-host", "0.0.0.0", "-port", "0", *crawl) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "-host 0.0.0.0 is reachable from other machines" in err[0] and "-insecure" in err[0]
    assert cli("server", "-crawlId", CRAWL, "-solr", SOLR, "-sslCert", str(cert), *crawl) == 1
    assert "give both -sslCert FILE and -sslKey FILE" in capsys.readouterr().err
    (tmp / "short").write_text("abc\n")
    assert cli("server", "-crawlId", CRAWL, "-solr", SOLR, "-tokenFile", str(tmp / "short"), *crawl) == 1
    assert "at least 16 characters" in capsys.readouterr().err
    with SearchServer(["-crawlId", CRAWL, "-solr", SOLR, "-host", "0.0.0.0", "-insecure", *crawl],
                      tmp / "server-insecure.log") as server:
        assert "warning: -insecure: anyone who reaches 0.0.0.0 can read the crawl" in server.output()
        r = requests.get(server.url.replace("0.0.0.0", "127.0.0.1") + "/api/stats", timeout=30)
        assert r.json()["total"] == 2
        hostname = socket.gethostname()
        r = requests.get(server.url.replace("0.0.0.0", "127.0.0.1") + "/api/stats", timeout=30,
                         headers={"Host": f"{hostname}:{port(server)}"})
        assert r.status_code == 421  # a name the operator did not list


def test_names_the_operator_added_are_let_in_over_a_real_socket(crawl: list[str], tmp: Path) -> None:
    """-host adds the name the server is bound to, searcher.allowed.hosts adds more; other names stay out."""
    args = ["-crawlId", CRAWL, "-solr", SOLR, "-host", "127.0.0.2", "-D",
            "searcher.allowed.hosts=search.test, Other.Example.", *crawl]
    with SearchServer(args, tmp / "server-names.log") as server:
        assert server.url.startswith("http://127.0.0.2:")
        p = port(server)
        page = f"{ARCHIVE}/page.html"
        for host in (f"127.0.0.2:{p}", "127.0.0.2", f"search.test:{p}", f"SEARCH.test.:{p}", f"other.example:{p}",
                     f"localhost:{p}"):
            r = requests.get(f"{server.url}/api/page", params={"url": page}, headers={"Host": host}, timeout=30)
            assert r.status_code == 200 and r.json()["title"] == "Mine", (host, r.status_code)
        r = requests.get(f"{server.url}/api/page", params={"url": page},
                         headers={"Host": f"search.test:{p}", "Origin": f"http://search.test:{p}"}, timeout=30)
        assert r.status_code == 200  # a page of an allowed name on this port may ask
        for host, origin in ((f"evil.example:{p}", None), (f"search.test.evil.example:{p}", None),
                             (f"search.test:{p}", f"http://evil.example:{p}"),
                             (f"search.test:{p}", f"http://search.test:{p + 1}")):
            headers = {"Host": host, **({"Origin": origin} if origin else {})}
            r = requests.get(f"{server.url}/api/page", params={"url": page}, headers=headers, timeout=30)
            assert r.status_code == (421 if origin is None else 403) and "Mine" not in r.text, (host, origin)


class StandardParser(SolrClient):
    """The server's Solr client, asking Solr's standard query parser (as nutch2 did before edismax), so that the
    real Solr rejects what it cannot parse: through edismax this Solr rejects no query the app can send (it reads
    what it cannot parse as words), yet the app must still answer a rejection in one message."""

    def search(self, q: str, **params: Any) -> Any:
        return super().search(q, **{**params, "defType": "lucene"})


def test_a_query_solr_rejects_is_one_message_a_400_and_names_no_url(crawl: list[str], tmp: Path) -> None:
    import logging

    from nutch2.searcher.app import create_app
    from nutch2.searcher.search import SolrBackend

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("nutch2.searcher").addHandler(handler)
    app = create_app(conf_for(tmp, "sqlite"), CRAWL, SolrBackend(StandardParser(SOLR, 30)))
    try:
        with serving(app) as url:
            assert requests.get(f"{url}/api/search", params={"q": MINE}, timeout=30).json()["numFound"] == 1
            r = requests.get(f"{url}/api/search", params={"q": "title:("}, timeout=30)
            assert r.status_code == 400 and list(r.json()) == ["error"], r.text
            assert r.json()["error"].startswith("Solr could not run this query: Cannot parse 'title:(':"), r.text
            page = requests.get(f"{url}/search", params={"q": "title:("}, timeout=30)
            assert page.status_code == 400 and page.text.count('role="alert"') == 1
            assert "Solr could not run this query" in page.text and 'value="title:("' in page.text
            for text in (r.text, page.text):
                assert "8983" not in text and "http://" not in text and "/solr" not in text and "Traceback" not in text
            assert any(m.startswith(f"Solr at {SOLR} rejected the request") for m in records)  # the operator's log
    finally:
        logging.getLogger("nutch2.searcher").removeHandler(handler)


class Listener:
    """A loopback HTTP server that only counts the requests reaching it (where a hostile `solr` argument points)."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.requests += 1
                self.send_response(200)
                self.end_headers()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *_args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/solr/evil"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def idle(server: SearchServer) -> None:
    """Wait until no job runs (one job at a time: a 409 would prove nothing)."""
    deadline = time.monotonic() + 120
    while any(j["state"] == "RUNNING" for j in jobs(server)):
        assert time.monotonic() < deadline, jobs(server)
        time.sleep(0.2)


def finished(server: SearchServer, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while (info := requests.get(f"{server.url}/api/jobs/{job_id}", timeout=30).json())["state"] == "RUNNING":
        assert time.monotonic() < deadline, info
        time.sleep(0.2)
    return info


def test_job_arguments_take_no_urls_or_paths(server: SearchServer, tmp: Path, files: Path) -> None:
    idle(server)
    before, table = jobs(server), set(rows(conf_for(tmp, "sqlite"), CRAWL))
    elsewhere = tmp / "elsewhere"  # a folder the operator never named, with seeds and an archive in it
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / "seeds.txt").write_text("http://elsewhere.test/\n")
    (elsewhere / "e.warc.gz").write_bytes((tmp / "h.warc.gz").read_bytes())
    if not (files / "link").exists():
        (files / "link").symlink_to(elsewhere)  # a name inside the files folder that leads out of it
    evil = Listener()
    try:
        for job, args in (("index", {"all": True}), ("clean", {}), ("dedup", {}),
                          ("crawl", {"seedUrls": ["http://elsewhere.test/"], "index": True})):
            r = requests.post(f"{server.url}/api/jobs", json={"type": job, "args": {**args, "solr": evil.url}},
                              timeout=30)
            assert r.status_code == 400 and r.json()["error"] == (
                f"{job}: args.solr cannot be set through the job API (the server decides it)"), r.text
        for job, name, value in (
                ("inject", "seedDir", str(elsewhere)), ("inject", "seedDir", "../elsewhere"),
                ("inject", "seedDir", "seeds/../../elsewhere/seeds.txt"), ("inject", "seedDir", "link"),
                ("inject", "seedDir", "link/seeds.txt"), ("crawl", "seedDir", "../elsewhere/seeds.txt"),
                ("sitemap", "sitemapUrls", "../elsewhere/seeds.txt"),
                ("warcimport", "files", ["../elsewhere/e.warc.gz"]), ("warcimport", "files", ["link/e.warc.gz"]),
                ("readdb", "dump", "../out"), ("readdb", "dump", str(tmp / "out")), ("warc", "outdir", "link/out")):
            args = {name: value, **{"warc": {"all": True}, "crawl": {"rounds": 1}}.get(job, {})}
            r = requests.post(f"{server.url}/api/jobs", json={"type": job, "args": args}, timeout=30)
            # refused by the traversal check itself (this server has a files folder), naming no path of its own
            shown = str(value[0] if isinstance(value, list) else value)
            assert r.status_code == 400 and r.json()["error"] == (
                f"{job}: args.{name}: {shown!r} is not a name inside the server's files folder"), (args, r.text)
        assert evil.requests == 0  # no URL of the request was contacted
    finally:
        evil.close()
    # nothing was started, read or written: no job, no row from those seeds or that archive, no folder made
    assert jobs(server) == before
    assert set(rows(conf_for(tmp, "sqlite"), CRAWL)) == table
    assert not (tmp / "out").exists() and not (elsewhere / "out").exists()


def test_jobs_show_their_arguments_as_sent_and_no_url_or_path_of_the_server(server: SearchServer, tmp: Path,
                                                                           files: Path, crawl: list[str]) -> None:
    idle(server)
    own = (str(tmp), SOLR, "8983")  # the server's folders and its Solr URL
    bodies = ({"type": "warc", "args": {"outdir": "warcs", "all": True}},
              {"type": "readdb", "args": {"dump": "dumps/d1"}},
              {"type": "index", "args": {"all": True}},
              {"type": "readdb", "args": {"dump": "taken"}})  # a file: the job fails naming it
    shown: list[dict[str, Any]] = []
    for body in bodies:
        r = requests.post(f"{server.url}/api/jobs", json=body, timeout=30)
        assert r.status_code == 201 and r.json()["args"] == body["args"], r.text  # as sent: no path, no Solr
        assert not any(x in r.text for x in own), r.text
        shown.append(finished(server, r.json()["id"]))
    assert [j["args"] for j in shown] == [b["args"] for b in bodies]
    listed = {j["id"]: j["args"] for j in jobs(server)}
    assert [listed[j["id"]] for j in shown] == [b["args"] for b in bodies]
    warc, dump, index, taken = shown
    assert warc["state"] == dump["state"] == index["state"] == "FINISHED", shown
    assert warc["result"]["files"] and all((files / "warcs" / f).is_file() for f in warc["result"]["files"])
    assert list((files / "dumps" / "d1").iterdir())  # written where the client named, inside the files folder
    assert taken["state"] == "FAILED" and taken["error"] == (
        "nutch2 readdb: error: -dump taken: it is a file; give a new folder")
    for path in ("/api/jobs", *(f"/api/jobs/{j['id']}" for j in shown), "/crawl", "/crawl/jobs",
                 *(f"/crawl/jobs/{j['id']}{p}" for j in shown for p in ("", "/progress"))):
        text = requests.get(server.url + path, timeout=30).text
        assert not any(x in text for x in own), (path, text)
    assert f"-dump {files}/taken: it is a file" in server.output()  # the operator's log keeps the whole text
    # a job failing on the server's Solr: its URL is in the log, not in the answer
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once the socket is closed
    down_url = f"http://127.0.0.1:{closed}/solr/nutch"
    with SearchServer(["-crawlId", CRAWL, "-solr", down_url, "-jobs", *crawl], tmp / "server-no-solr.log") as down:
        r = requests.post(f"{down.url}/api/jobs", json={"type": "index", "args": {"all": True}}, timeout=30)
        assert r.status_code == 201 and r.json()["args"] == {"all": True}
        info = finished(down, r.json()["id"])
        assert info["state"] == "FAILED" and info["error"].startswith("nutch2 index: error: Solr at <solr> "), info
        for path in ("/api/jobs", f"/api/jobs/{info['id']}", "/crawl", "/crawl/jobs", f"/crawl/jobs/{info['id']}",
                     f"/crawl/jobs/{info['id']}/progress"):
            text = requests.get(down.url + path, timeout=30).text
            assert str(closed) not in text and str(tmp) not in text, (path, text)
        assert f"Solr at {down_url}" in down.output()
