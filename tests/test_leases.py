"""Leases in the store (stores/lease.py): the crawl's and the batches' locks, on every store: a second driver of
the same batch is refused, a lease held by a killed process is taken over with one line naming it, an expired
one of another machine too, and a driver that lost its lease cannot record a step (fencing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nutch2.crawldb.journal import GENERATED, Journal
from nutch2.errors import LeaseLost, StoreLockedError
from nutch2.stores import BatchLock, crawl_lock, crawler_lease, open_store
from nutch2.stores.lease import StoreLease, held_leases
from tests.conftest import SHARED_STORES, make_conf

REPO = Path(__file__).resolve().parent.parent


def test_second_holder_refused_then_free(store) -> None:
    first = StoreLease(store, "batch/b1", "fetch")
    assert first.try_acquire() is None
    second = StoreLease(store, "batch/b1", "parse")
    holder = second.try_acquire()
    assert holder is not None and holder["job"] == "fetch" and holder["pid"] == os.getpid()
    assert StoreLease(store, "batch/b2", "parse").try_acquire() is None  # another batch is free
    first.release()
    assert second.try_acquire() is None and second.token == first.token + 1
    second.release()


def test_every_batch_excludes_each_batch(tmp_path: Path, backend: str) -> None:
    if backend == "memory":
        pytest.skip("the memory store's rows (and leases) live in one process: each open is the same table")
    conf = make_conf(tmp_path, backend)
    cid = "l" + uuid.uuid4().hex[:10]
    open_store(conf, cid).close()
    with BatchLock(conf, cid, "b1", "fetch"):
        with pytest.raises(StoreLockedError, match=r"of batch b1, fetch \(pid \d+ on .*\), is running"):
            BatchLock(conf, cid, "b1", "parse")
        with pytest.raises(StoreLockedError, match="holds its lease"):
            BatchLock(conf, cid, None, "updatedb")
        BatchLock(conf, cid, "b2", "parse").release()
    with BatchLock(conf, cid, None, "updatedb"):
        with pytest.raises(StoreLockedError, match=r"every batch \(-all\)"):
            BatchLock(conf, cid, "b3", "index")
    with crawl_lock(conf, cid, "generate"):
        with pytest.raises(StoreLockedError, match="is rewriting this crawl"):
            crawl_lock(conf, cid, "inject")
    with open_store(conf, cid, create=False) as store:
        store.drop_schema()


def test_expired_lease_of_another_machine_is_taken_over(store) -> None:
    lines: list[str] = []
    other = {"state": "held", "holder": "x", "job": "fetch", "host": "elsewhere", "pid": 1, "token": 7,
             "expires": time.time() + 60}
    store.put_state("lease/batch/b1", json.dumps(other))
    assert StoreLease(store, "batch/b1", "fetch", log=lines.append).try_acquire() == other  # alive: refused
    store.put_state("lease/batch/b1", json.dumps({**other, "expires": time.time() - 1}))
    lease = StoreLease(store, "batch/b1", "fetch", log=lines.append)
    assert lease.try_acquire() is None and lease.token == 8
    assert lines == ["fetch: took over the batch/b1 lease of fetch (pid 1 on elsewhere): its lease expired"]
    lease.release()


def test_a_driver_that_lost_its_lease_records_nothing(store) -> None:
    journal = Journal(store)
    lease = StoreLease(store, "batch/b1", "fetch", ttl=1.0)
    assert lease.try_acquire() is None
    journal.record("b1", GENERATED, 3)  # fenced by the lease: recorded
    raw = store.get_state("lease/batch/b1")
    rec = json.loads(raw)
    # another driver takes the lease over (it saw this one expire): a new token
    assert store.swap_state("lease/batch/b1", raw, json.dumps({**rec, "holder": "other", "token": rec["token"] + 1}))
    with pytest.raises(LeaseLost, match="lost its lease batch/b1"):
        journal.record("b1", GENERATED, 4)
    assert journal.batch("b1").rows == 3
    assert not lease.renew() and lease.lost
    lease.release()


_HOLD = """
import sys, time
from pathlib import Path
from tests.conftest import make_conf
from nutch2.stores import BatchLock
BatchLock(make_conf(Path(sys.argv[1]), sys.argv[2]), sys.argv[3], "b1", "fetch")
print("held", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("backend", [b for b in SHARED_STORES])
def test_lease_of_a_killed_driver_is_taken_over_at_once(tmp_path: Path, backend: str) -> None:
    conf = make_conf(tmp_path, backend)
    cid = "k" + uuid.uuid4().hex[:10]
    open_store(conf, cid).close()
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path), backend, cid], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(StoreLockedError, match=f"pid {proc.pid}"):
            BatchLock(conf, cid, "b1", "parse")
        proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 30  # ended, and not reaped: a zombie still answers kill(pid, 0)
        while b") Z " not in Path(f"/proc/{proc.pid}/stat").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        lines: list[str] = []
        with BatchLock(conf, cid, "b1", "parse", log=lines.append):
            pass
        assert len(lines) == 1 and f"fetch (pid {proc.pid} on " in lines[0] and "its process is gone" in lines[0]
    finally:
        proc.kill()
        proc.wait(30)
        with open_store(conf, cid, create=False) as store:
            store.drop_schema()


def test_a_lease_whose_pid_now_belongs_to_another_process_is_taken_over(store) -> None:
    """The pid of a killed holder reused by a later process (here: this one) does not keep its lease."""
    lease = StoreLease(store, "crawl", "generate")
    assert lease.try_acquire() is None
    rec = json.loads(store.get_state("lease/crawl"))
    lease._stop.set()  # the holder "dies": no renewal, no release
    dead = json.dumps({**rec, "started": rec["started"] - 1000})  # this pid, an older process's start time
    assert store.swap_state("lease/crawl", store.get_state("lease/crawl"), dead)
    lines: list[str] = []
    second = StoreLease(store, "crawl", "inject", log=lines.append)
    assert second.try_acquire() is None and "its process is gone" in lines[0]
    second.release()


def test_an_expired_lease_of_a_live_process_of_this_machine_is_refused(store) -> None:
    """A holder of this machine that stopped renewing but still runs (Ctrl-Z, SIGSTOP) keeps its lease: taken
    over, it would go on writing rows beside the new holder once it is resumed."""
    lease = StoreLease(store, "crawler", "crawl")
    assert lease.try_acquire() is None
    lease._stop.set()  # no renewal, as in a stopped process; the process itself (this one) runs
    raw = store.get_state("lease/crawler")
    expired = json.dumps({**json.loads(raw), "expires": time.time() - 1})
    assert store.swap_state("lease/crawler", raw, expired)
    lines: list[str] = []
    holder = StoreLease(store, "crawler", "crawl", log=lines.append).try_acquire()
    assert holder is not None and holder["pid"] == os.getpid() and lines == []
    assert [scope for scope, _ in held_leases(store, "crawler")] == ["crawler"]


_STOPPED = """
import sys, time
from pathlib import Path
from tests.conftest import make_conf
from nutch2.stores import crawler_lease
conf = make_conf(Path(sys.argv[1]), "sqlite")
conf.set("storage.lease.ttl", "1")
crawler_lease(conf, sys.argv[2])
print("held", flush=True)
time.sleep(600)
"""


def test_a_crawl_stopped_with_ctrl_z_is_named_not_taken_over(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "sqlite")
    cid = "z" + uuid.uuid4().hex[:10]
    open_store(conf, cid).close()
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED, str(tmp_path), cid], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        proc.send_signal(signal.SIGSTOP)
        with open_store(conf, cid, create=False) as store:
            deadline = time.monotonic() + 30
            while json.loads(store.get_state("lease/crawler"))["expires"] >= time.time():  # its lease runs out
                assert time.monotonic() < deadline
                time.sleep(0.2)
        with pytest.raises(StoreLockedError, match=rf"pid {proc.pid} on .*stopped.*kill -CONT {proc.pid}"):
            crawler_lease(conf, cid)
    finally:
        proc.kill()
        proc.wait(30)


def test_a_lease_this_process_leaked_still_expires(store) -> None:
    """A lease of this process that it no longer holds (its release failed: a store gone for a moment, in the job
    server) is taken over once expired, as before, not refused while the server runs."""
    lease = StoreLease(store, "crawl", "inject")
    assert lease.try_acquire() is None
    raw = store.get_state("lease/crawl")
    store.put_state("lease/crawl", "x")  # the release's compare-and-set fails: the record stays "held"
    lease.release()
    store.put_state("lease/crawl", json.dumps({**json.loads(raw), "expires": time.time() - 1}))
    second = StoreLease(store, "crawl", "generate")
    assert second.try_acquire() is None
    second.release()


def test_a_command_whose_store_stopped_answering_writes_no_release(tmp_path: Path) -> None:
    """A job that failed with StoreUnavailable (HBase frozen): releasing its leases wrote to the store that did not
    answer, and waited out its timeout (the renewal's too) before the command said why it failed. Now the leases
    are left to expire (a rerun on this machine takes them over at once, their process gone)."""
    from nutch2.errors import StoreUnavailable

    conf = make_conf(tmp_path, "sqlite")
    held = crawl_lock(conf, None, "updatedb", create=True)
    writes = []
    swap = held.store.swap_state
    held.store.swap_state = lambda *a: writes.append(a) or swap(*a)  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailable):
        with held:
            raise StoreUnavailable("HBase at h:9090: get failed: no answer")
    assert writes == []
    with open_store(conf, None) as store:  # left held, to expire (or be taken over: its process gone)
        assert json.loads(store.get_state("lease/crawl"))["state"] == "held"


HOLD = """import sys, time, fasteners
lock = fasteners.InterProcessReaderWriterLock(sys.argv[1]) if sys.argv[2] == "read" else \\
    fasteners.InterProcessLock(sys.argv[1])
assert (lock.acquire_read_lock(blocking=False) if sys.argv[2] == "read" else lock.acquire(blocking=False))
print("held", flush=True)
time.sleep(120)
"""


def test_the_lock_files_of_an_older_nutch2_go_once_no_process_holds_them(tmp_path: Path) -> None:
    """Before its locks were leases, nutch2 kept fasteners lock files in storage.data.dir (the crawl's, its batches'
    and one per batch ever run) and never removed them. A command that takes the crawl's lease removes those of its
    crawl that no process holds (an older nutch2 still running keeps its own), and no other file."""
    from tests.crawlutil import defines, seed_file
    from tests.helpers import nutch2

    folder = tmp_path / "crawl"
    folder.mkdir()
    old = ["up_webpage.lock", "up_webpage.batches.lock", "up_webpage.batch-1796000000-1.lock",
           "up_webpage.batch-1796000001-2.lock", "up_webpage.batch-1796000002-3.lock"]
    kept = ["other_webpage.lock", "other_webpage.batch-1796000000-1.lock", "up_webpage.sqlite.lock", "notes.lock"]
    for name in old + kept:
        (folder / name).write_text("")
    holders = [subprocess.Popen([sys.executable, "-c", HOLD, str(folder / name), how], stdout=subprocess.PIPE,
                                text=True)
               for name, how in (("up_webpage.batches.lock", "read"), ("up_webpage.batch-1796000001-2.lock", "write"))]
    try:
        for p in holders:
            assert p.stdout is not None and p.stdout.readline().strip() == "held"
        d = defines(tmp_path, "sqlite")
        p = nutch2("inject", seed_file(tmp_path, "http://www.example.com/"), "-crawlId", "up", *d)
        assert p.returncode == 0, p.stderr
        assert "removed 3 lock file(s) an older nutch2 left" in p.stderr, p.stderr
        left = sorted(f.name for f in folder.iterdir() if f.name.endswith(".lock"))
        assert left == sorted(kept + ["up_webpage.batches.lock", "up_webpage.batch-1796000001-2.lock"])
    finally:
        for p in holders:
            p.kill()
            p.wait()
    p = nutch2("generate", "-crawlId", "up", *d)  # the older nutch2 has ended: its files go too
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in folder.iterdir() if f.name.endswith(".lock")) == sorted(kept)
