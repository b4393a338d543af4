"""Reversed-URL row keys, as Nutch 2's TableUtil (org.apache.nutch.util.TableUtil) builds them.

``http://bar.foo.com:8983/to/index.html?a=b#x`` becomes ``com.foo.bar:http:8983/to/index.html?a=b``:
host labels reversed, ``:`` protocol, ``:`` port when the URL gives one, then path and query
(a ``/`` is inserted when the path is missing but a query is present); the fragment is dropped.
All pages of one host share the key prefix ``<reversed host>:``.

Deliberate differences from Nutch, for inputs Nutch mangled: empty host labels are kept (so
``foo.com.`` round-trips), and a bracketed IPv6 host is kept as is instead of being cut at its dots
and colons (``[::1]:http:8080/``).
"""

from __future__ import annotations

import re

# RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
# Schemes whose URLs must name a host.
HOST_REQUIRED_SCHEMES = frozenset({"http", "https", "ftp"})


def _split_scheme(url: str) -> tuple[str, str]:
    """Split ``url`` into its lower-cased scheme and the rest after ``:``."""
    scheme, sep, rest = url.partition(":")
    if not sep or not _SCHEME_RE.fullmatch(scheme):
        raise ValueError(f"not an absolute URL (no scheme): {url!r}")
    return scheme.lower(), rest


def _split_authority(rest: str) -> tuple[str, str]:
    """Split what follows ``scheme:`` into authority and file (path + query), dropping the fragment."""
    rest = rest.partition("#")[0]
    if not rest.startswith("//"):
        return "", rest
    rest = rest[2:]
    end = len(rest)
    for delim in "/?":
        pos = rest.find(delim)
        if pos != -1:
            end = min(end, pos)
    return rest[:end], rest[end:]


def _split_host_port(authority: str, url: str) -> tuple[str, str]:
    """Split an authority into host and port (``""`` when none is given); user info is dropped."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1:
            raise ValueError(f"unterminated IPv6 host in URL {url!r}")
        host, after = hostport[: close + 1], hostport[close + 1 :]
        if after and not after.startswith(":"):
            raise ValueError(f"junk after IPv6 host in URL {url!r}")
        port = after[1:]
    else:
        host, _, port = hostport.partition(":")
    if port and not port.isdigit():
        raise ValueError(f"invalid port {port!r} in URL {url!r}")
    return host, str(int(port)) if port else ""


def reverse_host(host: str) -> str:
    """Reverse the dot-separated labels of a host name: ``bar.foo.com`` -> ``com.foo.bar``.

    Bracketed IPv6 literals are returned unchanged. The operation is its own inverse.
    """
    if host.startswith("["):
        return host
    return ".".join(reversed(host.split(".")))


def unreverse_host(reversed_host_name: str) -> str:
    """Inverse of :func:`reverse_host` (which is its own inverse)."""
    return reverse_host(reversed_host_name)


def reverse_url(url: str) -> str:
    """Row key of ``url``: ``http://foo.com:8900/a?b`` -> ``com.foo:http:8900/a?b``.

    Raises ValueError when the URL has no scheme, a bad port, or no host where its scheme needs one.
    """
    scheme, rest = _split_scheme(url)
    authority, file = _split_authority(rest)
    host, port = _split_host_port(authority, url)
    if not host and scheme in HOST_REQUIRED_SCHEMES:
        raise ValueError(f"{scheme} URL without a host: {url!r}")
    parts = [reverse_host(host), ":", scheme]
    if port:
        parts += [":", port]
    if file and not file.startswith("/"):
        parts.append("/")
    parts.append(file)
    return "".join(parts)


def _split_key(key: str) -> tuple[str, str, str, str]:
    """Split a row key into (reversed host, protocol, port, file)."""
    if key.startswith("["):
        close = key.find("]")
        if close == -1:
            raise ValueError(f"not a reversed URL key (unterminated IPv6 host): {key!r}")
        rhost, head_rest = key[: close + 1], key[close + 1 :]
    else:
        rhost, head_rest = "", key
    path_begin = head_rest.find("/")
    if path_begin == -1:
        path_begin = len(head_rest)
    head, file = head_rest[:path_begin], head_rest[path_begin:]
    fields = head.split(":")
    if rhost:
        if fields[0]:
            raise ValueError(f"not a reversed URL key (junk after IPv6 host): {key!r}")
        fields[0] = rhost
    if len(fields) not in (2, 3) or not fields[1]:
        raise ValueError(f"not a reversed URL key (want <reversed host>:<protocol>[:<port>]): {key!r}")
    port = fields[2] if len(fields) == 3 else ""
    return fields[0], fields[1], port, file


def unreverse_url(key: str) -> str:
    """URL of a row key: ``com.foo:http:8900/a?b`` -> ``http://foo.com:8900/a?b``.

    Raises ValueError when ``key`` does not look like ``<reversed host>:<protocol>[:<port>][/...]``.
    """
    rhost, protocol, port, file = _split_key(key)
    url = f"{protocol}://{unreverse_host(rhost)}"
    if port:
        url += f":{port}"
    return url + file


def get_reversed_host(key: str) -> str:
    """Reversed host of a row key: ``com.foo.bar:http:8983/x`` -> ``com.foo.bar``."""
    return _split_key(key)[0]


def reversed_host(key: str) -> str:
    """Alias of :func:`get_reversed_host` (the key prefix shared by all pages of one host)."""
    return get_reversed_host(key)


def host_of_key(key: str) -> str:
    """Host name of a row key: ``com.foo.bar:http/`` -> ``bar.foo.com``."""
    return unreverse_host(get_reversed_host(key))
