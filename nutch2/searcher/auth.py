"""Who may use the Searcher: an API token and HTTP basic users whose passwords are kept hashed (scrypt).

A users file has one `user:scrypt$<n>$<r>$<p>$<salt>$<hash>` line per user (base64 salt and hash, `#` comments);
`nutch2 server -users FILE -addUser NAME` adds or replaces a line. A token file holds the token on its first line.
Both are read once when the server starts.

Checking a password costs a scrypt (tens of milliseconds), so a login cannot be allowed to stall the server:
- the credentials that passed are remembered (by their SHA-256) for PASSED_TTL seconds: a logged-in client costs a
  hash, not a scrypt, and never waits behind anyone's failures;
- a scrypt runs off the event loop (the caller runs `verify` in a thread), at most SCRYPT_SLOTS at a time;
- an unknown user name costs the same scrypt as a known one (against a hash no password matches), so the time
  of the answer does not tell which names exist;
- a client (an address, or an IPv6 address's /64: access.client_of) whose attempts failed FREE_FAILURES times in
  a row waits, before it may try again, a back-off that doubles with each further failure (BACKOFF_FIRST ..
  BACKOFF_MAX seconds): meanwhile its attempts are answered 429 at once, without a scrypt.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import fasteners

from nutch2.errors import ConfigError

MIN_TOKEN = 16
_USER = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_N, _R, _P = 2**14, 8, 1  # scrypt cost: 16 MiB, ~50 ms
PASSED_TTL = 300.0  # seconds a verified user:password is taken without a scrypt
SCRYPT_SLOTS = 2  # scrypts running at once
FREE_FAILURES = 5  # failed attempts in a row a client may make before it waits
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0  # seconds


def hash_password(password: str, salt: bytes | None = None, n: int = _N, r: int = _R, p: int = _P) -> str:
    """`scrypt$n$r$p$salt$hash` for a users file."""
    salt = salt or os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=64 * 1024 * 1024)
    b64 = base64.b64encode
    return f"scrypt${n}${r}${p}${b64(salt).decode()}${b64(digest).decode()}"


def check_password(password: str, stored: str) -> bool:
    """Does `password` match a `scrypt$...` value (constant-time compare)?"""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        want = base64.b64decode(digest, validate=True)
        got = hashlib.scrypt(password.encode("utf-8"), salt=base64.b64decode(salt, validate=True), n=int(n),
                             r=int(r), p=int(p), dklen=len(want), maxmem=64 * 1024 * 1024)
    except (ValueError, binascii.Error):
        return False
    return hmac.compare_digest(got, want)


def read_users(path: Path) -> dict[str, str]:
    """user -> stored hash; ConfigError naming the file and line when it is not a users file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read the users file {path}: {e.strerror}; create it with "
                          "nutch2 server -users FILE -addUser NAME") from None
    users: dict[str, str] = {}
    for i, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, stored = line.partition(":")
        if not sep or not _USER.fullmatch(user) or not stored.startswith("scrypt$") or stored.count("$") != 5:
            raise ConfigError(f"{path}:{i} is not a 'user:scrypt$...' line; add users with "
                              "nutch2 server -users FILE -addUser NAME (passwords are never stored as they are)")
        users[user] = stored
    if not users:
        raise ConfigError(f"the users file {path} has no user; add one with nutch2 server -users FILE -addUser NAME")
    return users


def read_token(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read the token file {path}: {e.strerror}") from None
    token = lines[0].strip() if lines else ""
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        raise ConfigError(f"the token in {path} must be one word of at least {MIN_TOKEN} characters on the first "
                          "line, e.g. the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return token


def add_user(path: Path, user: str, password: str) -> None:
    """Add or replace `user` in the users file (created with mode 0600), written whole and renamed into place."""
    if not _USER.fullmatch(user):
        raise ConfigError(f"user name {user!r} must be 1-64 letters, digits or . _ @ -")
    if len(password) < 8:
        raise ConfigError("the password must have at least 8 characters")
    line = f"{user}:{hash_password(password)}"  # the scrypt runs before the lock is taken
    # two commands adding users at once: each reads, changes and renames the file under the lock, so none is lost
    with fasteners.InterProcessLock(str(path.with_name(path.name + ".lock"))):
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        kept = [ln for ln in lines if ln.partition(":")[0].strip() != user]
        kept.append(line)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(kept) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


class Backoff(Exception):
    """The client failed too often: it may try again after `retry_after` seconds (HTTP 429)."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed logins from this address; try again in {retry_after:.0f} s")
        self.retry_after = retry_after


@dataclass
class Credentials:
    """What a request may authenticate with; `required` is False when neither a token nor users are set.

    `check(authorization, client)` answers at once what needs no scrypt (no header, a token, a bad header, a
    remembered password, a client in back-off) and otherwise says so (NEEDS_SCRYPT); `verify` then does the scrypt,
    in a worker thread of the caller's."""

    token: str | None = None
    users: dict[str, str] = field(default_factory=dict)
    _passed: dict[bytes, float] = field(default_factory=dict)  # sha256 of what passed -> when it expires
    _failures: dict[str, tuple[int, float]] = field(default_factory=dict)  # client -> (failures, may retry at)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(SCRYPT_SLOTS))
    _decoy: str = field(default_factory=lambda: hash_password(os.urandom(16).hex()))

    @property
    def required(self) -> bool:
        return bool(self.token or self.users)

    def challenge(self) -> str:
        return 'Basic realm="nutch2", charset="UTF-8"' if self.users else 'Bearer realm="nutch2"'

    def check(self, authorization: str | None, client: str = "") -> str | None:
        """The user (or "token") an Authorization header proves, None when it proves nothing, NEEDS_SCRYPT when
        only `verify` can tell; Backoff when the client must wait."""
        parsed = self._parse(authorization)
        if parsed is None or isinstance(parsed, str):
            return parsed
        user, password, stored = parsed
        seen = self._seen(user, password, stored)
        now = time.monotonic()
        with self._lock:
            expires = self._passed.get(seen)
            if expires is not None and expires > now:
                return user
            failures, retry_at = self._failures.get(client, (0, 0.0))
        if retry_at > now:
            raise Backoff(retry_at - now)
        return NEEDS_SCRYPT

    def verify(self, authorization: str | None, client: str = "") -> str | None:
        """check(), then the scrypt where it is needed (a decoy hash for an unknown user: the same cost); a
        failure counts against the client. Blocking: run it in a thread."""
        answer = self.check(authorization, client)
        if answer is not NEEDS_SCRYPT:
            return answer
        parsed = self._parse(authorization)
        assert isinstance(parsed, tuple)
        user, password, stored = parsed
        with self._slots:
            ok = check_password(password, stored or self._decoy) and stored is not None
        now = time.monotonic()
        with self._lock:
            if ok:
                if len(self._passed) > 1024:
                    self._passed = {k: t for k, t in self._passed.items() if t > now}
                    if len(self._passed) > 1024:
                        self._passed.clear()
                self._passed[self._seen(user, password, stored)] = now + PASSED_TTL
                self._failures.pop(client, None)
                return user
            failures = self._failures.get(client, (0, 0.0))[0] + 1
            wait = 0.0 if failures < FREE_FAILURES else min(BACKOFF_MAX,
                                                            BACKOFF_FIRST * 2 ** (failures - FREE_FAILURES))
            if len(self._failures) > 10000:  # many addresses: forget those whose wait is over
                self._failures = {c: f for c, f in self._failures.items() if f[1] > now}
            self._failures[client] = (failures, now + wait)
        return None

    def _parse(self, authorization: str | None) -> str | None | tuple[str, str, str | None]:
        """What needs no scrypt (None, the token's "token"), else (user, password, stored hash or None)."""
        if not authorization:
            return None
        scheme, _, value = authorization.strip().partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme == "bearer" and self.token:
            return "token" if hmac.compare_digest(value.encode(), self.token.encode()) else None
        if scheme != "basic" or not self.users:
            return None
        try:
            user, sep, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if not sep:
            return None
        return user, password, self.users.get(user)

    @staticmethod
    def _seen(user: str, password: str, stored: str | None) -> bytes:
        return hashlib.sha256(f"{user}\0{password}\0{stored}".encode()).digest()


NEEDS_SCRYPT = "\0scrypt"  # check(): only verify() can tell
