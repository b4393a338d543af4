"""The address guard (nutch2/fetch/addresses.py): which addresses it refuses, in every spelling, what it lets
through, and that the address it checks is the one it connects to."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.fetch.addresses import (
    AddressDenied,
    AddressPolicy,
    guarded_seeds,
    origin_of,
    record_seeds,
    seed_origins,
    why_denied,
)
from tests.conftest import make_conf


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.3.2.1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.9", "private"),
    ("192.168.1.1", "private"), ("169.254.169.254", "a cloud metadata address"), ("169.254.3.4", "link-local"),
    ("100.100.100.200", "a cloud metadata address"), ("100.64.0.1", "not globally routable"),
    ("0.0.0.0", "unspecified"), ("224.0.0.251", "multicast"), ("255.255.255.255", "private"),
    ("::1", "loopback"), ("::", "unspecified"), ("fe80::1", "link-local"),
    ("fd00:ec2::254", "a cloud metadata address"),
    ("fc00::5", "private"), ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback, 127.0.0.1 inside"), ("::ffff:10.0.0.1", "private, 10.0.0.1 inside"),
    ("2002:7f00:1::", "loopback, 127.0.0.1 inside"), ("64:ff9b::a9fe:a9fe", "a cloud metadata address, "
                                                                         "169.254.169.254 inside"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback, 127.0.0.1 inside"),  # Teredo, client 127.0.0.1
    ("8.8.8.8", None), ("2001:4860:4860::8888", None), ("93.184.216.34", None),
])
def test_what_the_guard_refuses(address: str, kind: str | None) -> None:
    assert why_denied(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.0.1", "localhost",
                                      "[::1]", "[::ffff:127.0.0.1]"])
def test_every_spelling_of_loopback_is_refused(spelling: str) -> None:
    policy = AddressPolicy.from_conf(make_conf(Path("/tmp"), **{"fetcher.address.allow": ""}))
    refusal = policy.check(f"http://{spelling}:8983/solr/admin/cores?action=UNLOAD")
    assert refusal is not None and refusal.startswith("denied address ") and "(loopback" in refusal, refusal
    assert "fetcher.address.allow" in refusal  # it names the fix


def test_what_is_listed_or_seeded_is_let_through(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"fetcher.address.allow": "intranet.test, 10.1.0.0/16, 127.0.0.1:8080, "
                                                            "[::1]:9000"})
    policy = AddressPolicy.from_conf(conf, ["127.0.0.1:7000"])
    loop, ten = ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("10.1.9.9")
    assert policy.refusal("intranet.test", 1234, ten) is None  # a listed name, any port
    assert policy.refusal("other.test", 1, ten) is None  # a listed network
    assert policy.refusal("other.test", 1, ipaddress.ip_address("10.2.0.1")) is not None
    assert policy.refusal("127.0.0.1", 8080, loop) is None and policy.refusal("127.0.0.1", 8983, loop) is not None
    assert policy.refusal("127.0.0.1", 7000, loop) is None  # a seed's origin
    assert policy.refusal("::1", 9000, ipaddress.ip_address("::1")) is None
    assert policy.refusal("public.test", 80, ipaddress.ip_address("8.8.8.8")) is None
    off = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.guard": "false"}))
    assert off.check("http://127.0.0.1:8983/") is None and off.refusal("x", 1, loop) is None


def test_a_bad_network_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'10.1.0.0/99' is not a network"):
        AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.allow": "10.1.0.0/99"}))


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)

    def accept() -> None:
        with contextlib.suppress(OSError):  # the test closes the listener when done
            for _ in range(8):
                sock.accept()[0].close()

    threading.Thread(target=accept, daemon=True).start()
    return sock


def test_the_address_checked_is_the_one_connected_to(tmp_path: Path) -> None:
    listener = _listener()
    port = listener.getsockname()[1]
    try:
        guarded = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.allow": ""}))
        with pytest.raises(AddressDenied, match=f"denied address 127.0.0.1 of localhost:{port} \\(loopback\\)"):
            guarded.connect("localhost", port, 5)
        allowed = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.allow": f"localhost:{port}"}))
        allowed.connect("localhost", port, 5).close()
    finally:
        listener.close()


def test_inject_records_the_seeds_of_this_machines_network(store) -> None:
    found, late = guarded_seeds({("127.0.1.1", 80), ("localhost", 8080), ("8.8.8.8", 80), ("nosuch.invalid", 80)},
                                30)
    assert found == ["127.0.1.1:80", "localhost:8080"] and late == 0
    record_seeds(store, found)
    record_seeds(store, ["10.0.0.1:443"])
    assert seed_origins(store) == ["10.0.0.1:443", "127.0.1.1:80", "localhost:8080"]


def test_origins_of_urls() -> None:
    assert origin_of("http://Example.COM./a") == ("example.com", 80)
    assert origin_of("https://[::1]:8443/") == ("::1", 8443)
    assert origin_of("ftp://x/") is None and origin_of("http://[bad/") is None
