"""urlfilter-validator, as Nutch's UrlValidator (itself after Apache Commons Validator). A URL passes when:

- every character is printable ASCII (``!`` to ``~``: no space, no control or non-ASCII character);
- it has a scheme of letters only and an authority (``//...``; so ``file:/x`` and ``file:///x`` fail);
- the authority is a host name or an IPv4 address (each part at most 255), with an optional port of 1-5 digits and
  nothing else (no user info, no IPv6 literal, no ``_``);
- a host name has at least two labels of letters, digits and ``-``, and its last label is at least two characters
  long and starts with a letter (so ``localhost`` fails);
- the path holds only letters, digits and ``-_:@&?=+,.!/~*'%$;()``, and its ``..`` segments do not climb above
  the root;
- query and fragment may hold anything printable.
"""

from __future__ import annotations

import re

from nutch2.urls.filters import URLFilter

_PRINTABLE = re.compile(r"[\x21-\x7e]+")
# RFC 3986 appendix B: scheme, authority, path, query, fragment
_PARTS = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S)
_SCHEME = re.compile(r"[a-zA-Z]+")
_AUTHORITY = re.compile(r"([a-zA-Z0-9.-]*)(:[0-9]*)?(.*)", re.S)
_IPV4 = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})")
_LABEL = re.compile(r"[^\s;/@&=,.?:+$]+")
_PORT = re.compile(r":[0-9]{1,5}")
_PATH = re.compile(r"(?:/[-\w:@&?=+,.!/~*'%$;()]*)?", re.ASCII)


def _host_problem(host: str) -> str | None:
    """Why ``host`` is neither an IPv4 address nor a host name by the rules, or None."""
    ip = _IPV4.fullmatch(host)
    if ip:
        return None if all(int(part) <= 255 for part in ip.groups()) else f"IPv4 address {host} out of range"
    labels = host.split(".")
    if not host or not all(_LABEL.fullmatch(label) for label in labels):
        return f"bad host name {host!r}"
    if len(labels) < 2:
        return f"host name {host!r} has a single label"
    top = labels[-1]
    if len(top) < 2 or not top[0].isalpha():
        return f"top-level label {top!r} of {host!r} is shorter than 2 characters or starts with no letter"
    return None


def _path_problem(path: str) -> str | None:
    if not _PATH.fullmatch(path):
        return f"path {path!r} holds characters outside -_:@&?=+,.!/~*'%$;() letters and digits"
    ups = _count(path, "..")
    if ups and path.count("/") - _count(path, "//") - 1 <= ups:
        return f"path {path!r} climbs above the root"
    return None


def _count(text: str, token: str) -> int:
    """Occurrences of ``token`` in ``text``, overlapping ones included (``///`` holds ``//`` twice)."""
    count, at = 0, text.find(token)
    while at >= 0:
        count += 1
        at = text.find(token, at + 1)
    return count


def problem(url: str) -> str | None:
    """Why ``url`` is not valid by the rules (the module docstring), or None when it is."""
    if not _PRINTABLE.fullmatch(url):
        return "not all printable ASCII (a space, a control or non-ASCII character)"
    parts = _PARTS.fullmatch(url)
    assert parts is not None  # every string matches the RFC 3986 pattern
    scheme, authority, path, _query, _fragment = parts.groups()
    if scheme is None or not _SCHEME.fullmatch(scheme):
        return "no scheme of letters only"
    if authority is None:
        return "no authority (//host)"
    host, port, extra = _AUTHORITY.fullmatch(authority).groups()  # type: ignore[union-attr]
    if extra.strip():  # (Nutch checks it last; the verdict is the same, the reason clearer)
        return f"authority {authority!r} is not host[:port] (no user info, IPv6 literal or '_')"
    why = _host_problem(host)
    if why:
        return why
    if port is not None and not _PORT.fullmatch(port):
        return f"bad port {port!r}"
    return _path_problem(path)


class UrlValidator(URLFilter):
    nutch_class = "org.apache.nutch.urlfilter.validator.UrlValidator"

    def filter(self, url: str) -> str | None:
        return url if problem(url) is None else None

    def explain(self, url: str) -> str | None:
        why = problem(url)
        return f"invalid: {why}" if why else None
