"""Answers to a host's HTTP authentication challenge (RFC 7617 Basic, RFC 7616 Digest) from the credentials
http.auth.credentials names for it."""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

from nutch2.plugins.protocol_http.netconf import Challenge, Credentials


class DigestAuth:
    """Answers a host's Digest challenge (urllib's digest handler: nonce counts, qop, MD5/SHA algorithms); later
    requests to the host send the answer at once, as a browser does."""

    def __init__(self, creds: Credentials, url: str, challenge: Challenge) -> None:
        import urllib.request

        parts = urlsplit(url)
        passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()  # for every path of the host
        passwords.add_password(None, f"{parts.scheme}://{parts.netloc}/", creds.username, creds.password)
        self._handler = urllib.request.AbstractDigestAuthHandler(passwords)
        self._chal = urllib.request.parse_keqv_list(filter(None, urllib.request.parse_http_list(challenge.params)))
        self._request = urllib.request.Request

    def header(self, url: str) -> str | None:
        answer = self._handler.get_authorization(self._request(url), self._chal)
        return f"Digest {answer}" if answer else None


class BasicAuth:
    """Sends the credentials with every request to the host (after its first 401)."""

    def __init__(self, creds: Credentials) -> None:
        token = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode("ascii")
        self._header = f"Basic {token}"

    def header(self, url: str) -> str | None:
        return self._header

