"""Network settings as Nutch configures them: http.proxy.*, httpclient-auth.xml, WWW-Authenticate challenges."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.plugins.protocol_http.netconf import (
    Challenge,
    find_credentials,
    parse_challenges,
    proxy_settings,
    read_auth_file,
    redact,
)
from nutch2.plugins.protocol_http.plugin import http_settings
from tests.conftest import make_conf


def test_proxy_settings_and_exceptions(tmp_path: Path) -> None:
    assert proxy_settings(make_conf(tmp_path)) is None
    p = proxy_settings(make_conf(tmp_path, **{"http.proxy.host": "proxy.example", "http.proxy.port": 3128,
                                              "http.proxy.username": "u s", "http.proxy.password": "p@ss:w",
                                              "http.proxy.exception.list": "intranet, .example.org"}))
    assert p is not None and (p.host, p.port, p.username, p.password) == ("proxy.example", 3128, "u s", "p@ss:w")
    assert "p@ss" not in repr(p) and "p@ss" not in repr(http_settings(make_conf(
        tmp_path, **{"http.proxy.host": "h", "http.proxy.password": "p@ss"})))
    assert not p.applies("http://intranet/x") and not p.applies("http://www.example.org/")
    assert not p.applies("http://example.org/") and p.applies("http://example.com/") and p.applies("http://xintranet/")
    for bad, match in (({"http.proxy.port": 0}, "not a port"), ({"http.proxy.type": "FTP"}, "HTTP or SOCKS")):
        with pytest.raises(ConfigError, match=match):
            proxy_settings(make_conf(tmp_path, **{"http.proxy.host": "h", **bad}))


def test_auth_file_and_challenges(tmp_path: Path) -> None:
    path = tmp_path / "auth.xml"
    path.write_text('<auth-configuration><credentials username="a" password="pa"><default/></credentials>'
                    '<credentials username="b" password="pb"><authscope host="Intra.Example" port="8080" '
                    'realm="staff" scheme="digest"/></credentials></auth-configuration>')
    creds = read_auth_file(str(path))
    digest = Challenge("DIGEST", "staff")
    assert find_credentials(creds, "http://intra.example:8080/x", digest).username == "b"  # the specific scope
    assert find_credentials(creds, "http://intra.example/x", digest).username == "a"  # another port: default
    assert find_credentials(creds, "http://intra.example:8080/x", Challenge("BASIC", "staff")).username == "a"
    assert parse_challenges('Digest realm="a, b", qop="auth,auth-int", nonce="n", Basic realm=x') == [
        Challenge("DIGEST", "a, b"), Challenge("BASIC", "x")]
    assert parse_challenges(None) == []
    path.write_text('<auth-configuration><credentials username="a"><default/></credentials></auth-configuration>')
    with pytest.raises(ConfigError, match="username and password"):
        read_auth_file(str(path))
    path.write_text("<auth-configuration>")
    with pytest.raises(ConfigError, match="httpclient-auth.xml"):
        read_auth_file(str(path))
    assert redact("proxy http://u:s3cret@h failed", ("s3cret",)) == "proxy http://u:***@h failed"


def test_basic_and_digest_answer_every_path_of_their_host() -> None:
    """One 401 per host and thread: the answer to a challenge met on a deep path is sent at once for the host's
    other paths (Digest: the same nonce with its count raised), and a wrong password is asked once, not again."""
    from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
    from nutch2.plugins.protocol_http.netconf import AuthScope, Credentials
    from tests.testweb import TestWeb

    with TestWeb(hosts=1, pages_per_host=2, traps=False, beyond_html=True) as web:
        for host, (user, password) in ((web.basic_host, web.basic_credentials),
                                       (web.digest_host, web.digest_credentials)):
            for pw, status in ((password, 200), ("wrong", 401)):
                web.reset_log()
                creds = Credentials(user, pw, (AuthScope(host=web.hosts[host]),))
                protocol = HttpProtocol(HttpSettings(agent="t", auth=(creds,)))
                codes = [protocol.fetch(web.url(host, path)).http_code for path in ("/p/2.html", "/p/1.html", "/")]
                assert codes == [status] * 3, (host, pw)
                # the test web logs a request once answered: a 401 and the request that answers it may log either
                # way round (another connection, another thread), so the answers are compared as counts
                answers = sorted(r.status for r in web.requests(host))
                assert answers == ([200, 200, 200, 401] if status == 200 else [401, 401, 401, 401]), host
