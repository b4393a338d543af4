"""Leases kept in the store: the crawl's and each batch's, so that two commands on two machines cannot rewrite
the same crawl or run the same batch at once (file locks only kept apart the commands of one machine).

A lease is one crawl-state record, `lease/<scope>`, changed only by compare-and-set (DataStore.swap_state):

    {"state": "held" | "released", "holder": id, "job": command, "host": name, "pid": n, "started": ticks,
     "token": n, "expires": unix seconds}

- taking it: absent, released or expired records are replaced by our own with the next fencing token; a record
  whose holder ran on this machine in a process that has ended (kill -9; its pid gone, a zombie not yet reaped,
  or now another process's: the record keeps the holder's start time) is taken over at once; a live holder's
  record is refused with one line naming it, expired or not when the holder runs on this machine (a command
  stopped by Ctrl-Z renews nothing, and resumed it would go on writing rows beside the new holder: the line says
  it is stopped and how to resume it). Only another machine's holder loses its lease by expiry. Taking over is
  said in one line naming the old holder.
- holding it: a renewal thread pushes `expires` ahead every ttl/3; a renewal that finds the record changed
  means another command took the lease over: the lease is lost and fence() no longer holds.
- fencing: the journal writes its records through DataStore.put_state_fenced with the lease's Fence, so a
  command that lost its lease cannot record a step (on stores with transactions the check and the write are
  one transaction; on the others the lease is read just before the write).
Expiry compares wall clocks of different machines: keep them in sync (NTP), as every lease service needs.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from nutch2.errors import StoreLockedError
from nutch2.stores.base import DataStore, Fence

PREFIX = "lease/"


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), or None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return -1 if fields[0] in (b"Z", b"X") else int(fields[19])  # a zombie has ended: -1 matches no start


def _alive(pid: int, started: int | None = None) -> bool:
    """Does the process that took a lease still run on this machine? A pid that ended and was not reaped yet (a
    zombie: a command killed under a parent that has not waited for it) has gone, and so has one whose pid now
    belongs to a process started later."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    ticks = _start_ticks(pid)
    if ticks == -1:
        return False
    return started is None or ticks is None or ticks == started


_OWN_START = _start_ticks(os.getpid())
_HOLDING: set[str] = set()  # the holder ids of the leases this process holds now


def _stopped(pid: int) -> bool:
    """Is process `pid` of this machine stopped (Ctrl-Z, SIGSTOP, a debugger)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def holder_text(rec: dict) -> str:
    pid, host = rec.get("pid", "?"), rec.get("host", "?")
    if isinstance(pid, int) and host == socket.gethostname() and _stopped(pid):
        return (f"{rec.get('job', '?')} (pid {pid} on {host}, stopped: resume it with `fg` in its terminal or "
                f"`kill -CONT {pid}`, or end it)")
    return f"{rec.get('job', '?')} (pid {pid} on {host})"


class StoreLease:
    """One lease of one crawl, taken by one command (acquire), renewed in the background, released at the end."""

    def __init__(self, store: DataStore, scope: str, job: str, ttl: float = 30.0,
                 log: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.name = PREFIX + scope
        self.scope = scope
        self.job = job
        self.ttl = max(1.0, ttl)
        self.log = log or (lambda _msg: None)
        self.holder = uuid.uuid4().hex[:12]
        self.host = socket.gethostname()
        self.token = 0
        self.lost = False
        self._raw: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- taking it
    def try_acquire(self) -> dict | None:
        """Take the lease; None when taken, else the live holder's record."""
        for _ in range(20):  # a record that changes under us is read again
            raw = self.store.get_state(self.name)
            rec = _parse(raw)
            taking_over = None
            if rec is not None and rec.get("state") == "held":
                if self._gone(rec):
                    taking_over = "its process is gone"
                elif rec.get("expires", 0) < time.time() and not _runs_here(rec, self.host):
                    taking_over = "its lease expired"
                else:
                    return rec
            mine = self._record((rec or {}).get("token", 0) + 1)
            if self.store.swap_state(self.name, raw, mine):
                self._raw = mine
                self.token = json.loads(mine)["token"]
                if taking_over is not None and rec is not None:
                    self.log(f"{self.job}: took over the {self.scope} lease of {holder_text(rec)}: {taking_over}")
                self._start()
                _push(self)
                return None
        raise StoreLockedError(f"{self.job}: the {self.scope} lease keeps changing under this command; try again")

    def _gone(self, rec: dict) -> bool:
        return _gone(rec, self.host)

    def _record(self, token: int, state: str = "held") -> str:
        return json.dumps({"state": state, "holder": self.holder, "job": self.job, "host": self.host,
                           "pid": os.getpid(), "started": _OWN_START, "token": token,
                           "expires": round(time.time() + self.ttl, 3)})

    def fence(self) -> Fence:
        return Fence(self.name, self.token)

    # ---------------------------------------------------------------- holding it
    def _start(self) -> None:
        _HOLDING.add(self.holder)
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{self.scope}", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.renew()
            except Exception:  # a store hiccup: the next beat tries again; expiry decides meanwhile
                continue
            if self.lost:
                return

    def renew(self) -> bool:
        with self._lock:
            if self.lost or self._raw is None:
                return False
            new = self._record(self.token)
            if self.store.swap_state(self.name, self._raw, new):
                self._raw = new
                return True
            self.lost = True
            return False

    def release(self, record: bool = True, wait: bool = True) -> None:
        """Stop renewing the lease and record it released. record=False writes nothing: the record stays held until
        it expires (a table about to be dropped, whose record goes with it; a store that stopped answering, where
        the write would wait out its timeout before the command could say why it failed: then wait=False too, not
        waiting for a renewal in flight). A command of this machine takes such a lease over at once once its
        holder's process is gone."""
        _HOLDING.discard(self.holder)
        _pop(self)
        self._stop.set()
        if not wait:
            return
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            if record and self._raw is not None and not self.lost:
                try:
                    self.store.swap_state(self.name, self._raw, self._record(self.token, "released"))
                except Exception:  # noqa: BLE001 - the lease then expires by itself
                    pass
            self._raw = None


def process_record(job: str) -> dict:
    """This process as a lease names its holder (job, host, pid, start time): what process_gone() checks."""
    return {"job": job, "host": socket.gethostname(), "pid": os.getpid(), "started": _OWN_START}


def process_gone(rec: dict) -> bool:
    """Has the process a record names (process_record) ended? Only a process of this machine can be known gone."""
    return _gone(rec, socket.gethostname())


def _gone(rec: dict, host: str) -> bool:
    """Was the record's holder a process of this machine that has ended?"""
    pid, started = rec.get("pid"), rec.get("started")
    return (rec.get("host") == host and isinstance(pid, int)
            and not _alive(pid, started if isinstance(started, int) else None))


def _runs_here(rec: dict, host: str) -> bool:
    """Was the record's holder a process of this machine that still runs (stopped, perhaps)?"""
    pid, started = rec.get("pid"), rec.get("started")
    if pid == os.getpid() and started == _OWN_START:  # this process: only a lease it still holds (one whose
        return rec.get("holder") in _HOLDING        # release failed, in the job server, expires as before)
    return (rec.get("host") == host and isinstance(pid, int)
            and _alive(pid, started if isinstance(started, int) else None))


def _parse(raw: str | None) -> dict | None:
    if raw is None:
        return None
    try:
        rec = json.loads(raw)
        return rec if isinstance(rec, dict) else None
    except ValueError:
        return None


def _live(rec: dict | None, now: float, host: str) -> bool:
    """Held, not by a process of this machine that has ended, and not expired unless its holder runs here."""
    return (rec is not None and rec.get("state") == "held" and not _gone(rec, host)
            and (rec.get("expires", 0) >= now or _runs_here(rec, host)))


def held_leases(store: DataStore, prefix: str) -> list[tuple[str, dict]]:
    """Live leases whose scope starts with prefix: (scope, record)."""
    out = []
    now = time.time()
    host = socket.gethostname()
    for name, raw in store.states(PREFIX + prefix).items():
        if name.startswith(PREFIX + prefix):
            rec = _parse(raw)
            if _live(rec, now, host):
                out.append((name[len(PREFIX):], rec))  # type: ignore[arg-type]
    return out


def forget_lease(store: DataStore, scope: str) -> None:
    """Remove the record of a lease no one holds any more (released, expired, or its holder's process gone), so
    that scopes used once (a batch's) do not pile up; a live holder's record stays."""
    name = PREFIX + scope
    if not _live(_parse(store.get_state(name)), time.time(), socket.gethostname()):
        store.put_state(name, None)


# the leases the commands of this thread hold, per table: the journal's writes carry their fences
_active = threading.local()


def active_fences(table: str) -> list[Fence]:
    return [lease.fence() for lease in getattr(_active, "leases", []) if lease.store.table == table]


def _push(lease: StoreLease) -> None:
    if not hasattr(_active, "leases"):
        _active.leases = []
    _active.leases.append(lease)


def _pop(lease: StoreLease) -> None:
    leases = getattr(_active, "leases", [])
    if lease in leases:
        leases.remove(lease)
