"""The network as Nutch configures it: a proxy (``http.proxy.*``), HTTP authentication per host and realm from
Nutch's ``httpclient-auth.xml`` (``http.auth.file``), and cookies (``http.enable.cookie.header``).

Credentials live only here and in the requests that need them: they are left out of every ``repr`` of the settings,
and :func:`redact` takes them out of any text (an error message stored as a protocol status) before it is kept.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError

__all__ = ["AuthScope", "Challenge", "Credentials", "ProxySettings", "auth_settings", "parse_challenges",
           "proxy_settings", "redact"]

PROXY_TYPES = ("HTTP", "SOCKS")


@dataclass(frozen=True)
class ProxySettings:
    """Nutch's http.proxy.host/port/type/username/password and http.proxy.exception.list."""

    host: str
    port: int
    type: str = "HTTP"
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    exceptions: tuple[str, ...] = ()  # hosts that are fetched directly; ".example.com" / "*.example.com": a domain

    def applies(self, url: str) -> bool:
        """Whether `url` is fetched through the proxy (its host is not in the exception list)."""
        host = (urlsplit(url).hostname or "").lower()
        for rule in self.exceptions:
            if rule.startswith(("*.", ".")):
                domain = rule.lstrip("*").lstrip(".")
                if host == domain or host.endswith("." + domain):
                    return False
            elif host == rule:
                return False
        return True

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.password, quote(self.password, safe="")) if s)


def proxy_settings(conf: Configuration) -> ProxySettings | None:
    """The proxy of the configuration, None when http.proxy.host is empty."""
    host = conf.get_str("http.proxy.host").strip()
    if not host:
        return None
    port = conf.get_int("http.proxy.port")
    if not 0 < port < 65536:
        raise ConfigError(f"http.proxy.port={port} is not a port: give 1..65535, e.g. -D http.proxy.port=8080")
    kind = conf.get_str("http.proxy.type").strip().upper()
    if kind not in PROXY_TYPES:
        raise ConfigError(f"http.proxy.type={kind!r} is not known; use HTTP or SOCKS")
    if kind == "SOCKS":
        try:
            import socks  # noqa: F401 - PySocks, what urllib3 speaks SOCKS with
        except ImportError:
            raise ConfigError("http.proxy.type=SOCKS needs PySocks: pip install 'nutch2[socks]'") from None
    exceptions = tuple(h.strip().lower() for h in conf.get_str("http.proxy.exception.list").split(",") if h.strip())
    return ProxySettings(host, port, kind, conf.get_str("http.proxy.username"), conf.get_str("http.proxy.password"),
                         exceptions)


# ---------------------------------------------------------------------- authentication


@dataclass(frozen=True)
class AuthScope:
    """Where credentials apply (Nutch's <authscope host port realm scheme/>, or <default realm scheme/>)."""

    host: str | None = None  # None: any host (<default/>)
    port: int | None = None  # None: any port
    realm: str | None = None  # None: any realm
    scheme: str | None = None  # BASIC | DIGEST; None: any

    def matches(self, host: str, port: int, realm: str | None, scheme: str) -> bool:
        return ((self.host is None or self.host == host) and (self.port is None or self.port == port)
                and (self.realm is None or self.realm == realm) and (self.scheme is None or self.scheme == scheme))

    def rank(self) -> int:
        """More specific scopes win (an authscope of the host before a default)."""
        return sum(x is not None for x in (self.host, self.port, self.realm, self.scheme)) + (4 if self.host else 0)


@dataclass(frozen=True)
class Credentials:
    """A user name and password and the scopes they are for."""

    username: str = field(repr=False)
    password: str = field(repr=False)
    scopes: tuple[AuthScope, ...] = ()


@dataclass(frozen=True)
class Challenge:
    """One challenge of a WWW-Authenticate header."""

    scheme: str  # upper case: BASIC, DIGEST, ...
    realm: str | None
    params: str = field(default="", compare=False)  # what follows the scheme (realm="x", nonce="y", ...)


_CHALLENGE = re.compile(r"(?:^|,)\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?=\s+[^\s,]|\s*(?:,|$))")
_REALM = re.compile(r"""realm\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))""", re.I)


def parse_challenges(header: str | None) -> list[Challenge]:
    """The challenges of a WWW-Authenticate header (RFC 9110 11.6.1), with their realms."""
    if not header:
        return []
    found: list[Challenge] = []
    starts = [(m.start(1), m.group(1)) for m in _CHALLENGE.finditer(header)]
    for i, (pos, scheme) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(header)
        realm = _REALM.search(header[pos:end])
        value = None if realm is None else (realm.group(1) if realm.group(1) is not None else realm.group(2))
        params = header[pos + len(scheme):end].strip().rstrip(",").strip()
        found.append(Challenge(scheme.upper(), value.replace('\\"', '"') if value is not None else None, params))
    return found


def find_credentials(creds: tuple[Credentials, ...], url: str, challenge: Challenge) -> Credentials | None:
    """The credentials of the most specific scope matching the URL's host and port and the challenge."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    best: tuple[int, Credentials] | None = None
    for c in creds:
        for scope in c.scopes:
            fits = scope.matches(host, port, challenge.realm, challenge.scheme)
            if fits and (best is None or scope.rank() > best[0]):
                best = (scope.rank(), c)
    return best[1] if best else None


def read_auth_file(path: str) -> tuple[Credentials, ...]:
    """Nutch's httpclient-auth.xml: <auth-configuration><credentials username= password=><default/> or
    <authscope host= port= realm= scheme=/>...</credentials></auth-configuration>."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise ConfigError(f"{path}: cannot read it as Nutch's httpclient-auth.xml ({e}); fix it or set "
                          "http.auth.file to another file") from None
    out = []
    for c in root.iter("credentials"):
        user, password = c.get("username"), c.get("password")
        if user is None or password is None:
            raise ConfigError(f"{path}: <credentials> needs username and password attributes")
        scopes = []
        for el in c:
            scheme = (el.get("scheme") or "").strip().upper() or None
            realm = el.get("realm")
            if el.tag == "default":
                scopes.append(AuthScope(None, None, realm, scheme))
            elif el.tag == "authscope":
                host = (el.get("host") or "").strip().lower()
                if not host:
                    raise ConfigError(f"{path}: <authscope> needs a host attribute")
                port = (el.get("port") or "").strip()
                if port and not port.isdigit():
                    raise ConfigError(f"{path}: <authscope host={host!r}> port {port!r} is not a number")
                scopes.append(AuthScope(host, int(port) if port and int(port) >= 0 else None, realm, scheme))
        out.append(Credentials(user, password, tuple(scopes)))
    return tuple(out)


def auth_settings(conf: Configuration) -> tuple[Credentials, ...]:
    """The credentials of http.auth.file (in the conf dir); none when the file is not there."""
    name = conf.get_str("http.auth.file").strip()
    if not name:
        return ()
    path = conf.resource(name)
    return read_auth_file(str(path)) if path.is_file() else ()


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret (a password, a proxy password) replaced by ***."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text
