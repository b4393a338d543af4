"""The process's drivers (stores/pool.py): one per server and settings, shared by later opens, never by a forked
child; and the network stores' drivers against the real servers (issue 41)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from nutch2.stores import open_store, pool
from tests.conftest import SERVICE_STORES, make_conf


class Driver:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False


def _close(d: Driver) -> None:
    d.closed = True


def test_a_driver_is_made_once_per_settings_and_shared() -> None:
    made: list[Driver] = []

    def make() -> Driver:
        made.append(Driver(f"d{len(made)}"))
        return made[-1]

    kind = f"t{uuid.uuid4().hex[:6]}"
    a = pool.shared(kind, ("h", 1), make, _close)
    assert pool.shared(kind, ("h", 1), make, _close) is a
    b = pool.shared(kind, ("h", 2), make, _close)
    assert b is not a and len(made) == 2
    pool.discard(kind, ("h", 1), b)  # not the driver of those settings: kept
    assert not a.closed and pool.shared(kind, ("h", 1), make, _close) is a
    pool.discard(kind, ("h", 1), a)
    assert a.closed
    c = pool.shared(kind, ("h", 1), make, _close)
    assert c is not a and len(made) == 3
    for settings, d in ((("h", 1), c), (("h", 2), b)):
        pool.discard(kind, settings, d)
    assert b.closed and c.closed


def test_a_failed_connect_keeps_nothing() -> None:
    kind = f"t{uuid.uuid4().hex[:6]}"

    def fail() -> Driver:
        raise OSError("refused")

    with pytest.raises(OSError):
        pool.shared(kind, "s", fail, _close)
    ok = pool.shared(kind, "s", lambda: Driver("ok"), _close)
    assert ok.name == "ok"
    pool.discard(kind, "s", ok)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_driver_and_leaves_the_parents_open() -> None:
    kind = f"t{uuid.uuid4().hex[:6]}"
    parent = pool.shared(kind, "s", lambda: Driver("parent"), _close)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a new driver for the same settings; closing its drivers leaves the parent's
        try:
            child = pool.shared(kind, "s", lambda: Driver("child"), _close)
            pool.close_all()  # as at the child's exit: its own drivers only
            os.write(write, f"{child.name} {child.closed} {parent.closed}".encode())
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 100).decode()
    os.waitpid(pid, 0)
    os.close(read)
    assert answer == "child True False"
    assert pool.shared(kind, "s", lambda: Driver("again"), _close) is parent and not parent.closed
    pool.discard(kind, "s", parent)


def test_switch_interval_is_only_lowered() -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        pool.switch_interval(0)
        assert sys.getswitchinterval() == pytest.approx(0.005)
        pool.switch_interval(0.5)
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        pool.switch_interval(2)
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(before)


# ------------------------------------------------------------------ the real servers
def _need(backend: str) -> None:
    if backend not in SERVICE_STORES:
        pytest.skip(f"{backend} store not enabled (NUTCH2_TEST_STORES); run docker/services.sh start {backend}")


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["cassandra", "hbase"])
def test_opens_share_the_process_driver_and_close_keeps_it(backend: str, tmp_path: Path) -> None:
    _need(backend)
    conf = make_conf(tmp_path, backend)
    cid = "p" + uuid.uuid4().hex[:10]
    first = open_store(conf, cid)
    try:
        first.put_state("k", "v")
        first.close()
        second = open_store(conf, cid, create=False)  # after close: the same connections, still open
        if backend == "cassandra":
            assert second.session is first.session and not second.cluster.is_shutdown
        else:
            assert second.pool is first.pool
        assert second.get_state("k") == "v"
        second.close()
    finally:
        with open_store(conf, cid) as store:
            store.drop_schema()

