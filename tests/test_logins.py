"""Logins that cannot stall the Searcher (nutch2/searcher/auth.py, access.py), under load against a real server:
30 clients, each from an address of its own, send wrong passwords for a minute while a logged-in client searches;
its median latency stays within 2x of the idle server's. A known and an unknown user name are answered in the same
time (a scrypt each), so the answer's time says nothing of which names exist. Clients come from 127.x addresses
of their own (every 127.x.y.z is this machine), as they would from their own machines."""

from __future__ import annotations

import base64
import http.client
import statistics
import threading
import time

import pytest

from nutch2.searcher.auth import FREE_FAILURES, add_user
from tests.crawlutil import defines
from tests.searchapp import SOLR, SearchServer, require_solr

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ATTACKERS, ATTACK_SECONDS = 30, 60.0


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Client:
    """One keep-alive connection from a source address of its own."""

    def __init__(self, server: SearchServer, source: str) -> None:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        self.args = (host, int(port), source)
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        host, port, source = self.args
        return http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0))

    def get(self, path: str, authorization: str) -> tuple[int, float]:
        """(status, seconds) of one GET; a connection the server closed is opened again."""
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                self.conn.request("GET", path, headers={"Authorization": authorization, "Host": "127.0.0.1"})
                resp = self.conn.getresponse()
                resp.read()
                if resp.getheader("connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = self._connect()
                return resp.status, time.perf_counter() - started
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = self._connect()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    require_solr()
    tmp = tmp_path_factory.mktemp("logins")
    users = tmp / "users.txt"
    add_user(users, "ann", "the-right-password")
    with SearchServer(["-crawlId", "logins", "-solr", SOLR, "-users", users, *defines(tmp, "sqlite")],
                      tmp / "server.log") as s:
        yield s


def _searches(client: Client, seconds: float) -> list[float]:
    good = basic("ann", "the-right-password")
    out, until = [], time.monotonic() + seconds
    while time.monotonic() < until:
        status, took = client.get("/api/search?q=crawler", good)
        assert status == 200, status
        out.append(took)
    return out


@pytest.mark.timeout(400)
def test_wrong_passwords_do_not_stall_a_logged_in_client(server: SearchServer) -> None:
    me = Client(server, "127.0.0.1")
    _searches(me, 1.0)  # logged in: the password's scrypt is behind us
    idle = _searches(me, 8.0)
    answers: dict[int, int] = {}
    lock = threading.Lock()
    done = threading.Event()

    def attack(i: int) -> None:
        client = Client(server, f"127.0.3.{i + 1}")
        n = 0
        while not done.is_set():
            n += 1
            status, _ = client.get("/api/search?q=x", basic("ann", f"guess-{n}"))
            with lock:
                answers[status] = answers.get(status, 0) + 1

    threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(ATTACKERS)]
    for t in threads:
        t.start()
    try:
        during = _searches(me, ATTACK_SECONDS)
    finally:
        done.set()
        for t in threads:
            t.join(30)
    idle += _searches(me, 8.0)
    print(f"idle median {statistics.median(idle) * 1000:.1f} ms ({len(idle)}), under attack "
          f"{statistics.median(during) * 1000:.1f} ms ({len(during)}); attackers' answers {answers}")
    assert answers.get(401, 0) >= ATTACKERS * FREE_FAILURES and answers.get(429, 0) > 0, answers
    assert set(answers) <= {401, 429}, answers
    assert statistics.median(during) <= 2 * statistics.median(idle)


@pytest.mark.timeout(300)
def test_known_and_unknown_user_names_take_the_same_time(server: SearchServer) -> None:
    known: list[float] = []
    unknown: list[float] = []
    for i in range(40):  # interleaved, each pair from an address of its own (no back-off: two failures each)
        client = Client(server, f"127.0.4.{i + 1}")
        for name, times in (("ann", known), ("nobody", unknown)) if i % 2 else (("nobody", unknown), ("ann", known)):
            status, took = client.get("/api/stats", basic(name, "not-the-password"))
            assert status == 401
            times.append(took)
    ratio = statistics.median(known) / statistics.median(unknown)
    print(f"known {statistics.median(known) * 1000:.1f} ms, unknown {statistics.median(unknown) * 1000:.1f} ms")
    assert 0.8 <= ratio <= 1.2, ratio
