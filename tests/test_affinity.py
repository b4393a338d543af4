"""mapreduce.task.pin.cpu: each process that runs tasks keeps a task's threads on one processor; what it starts
gets every processor again."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from nutch2.config import Configuration
from nutch2.mapred import affinity
from nutch2.mapred.frameworks import make_runner
from nutch2.stores import open_store
from tests.conftest import CONF_DIR, REPO, require_chromium
from tests.helpers import TaskPlace

CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="one processor: nothing to choose")


def _conf(tmp: Path | None = None, **props: object) -> Configuration:
    base: dict[str, object] = {"http.agent.name": "nutch2-test"}
    if tmp is not None:
        base["storage.data.dir"] = tmp
    return Configuration(CONF_DIR, {k: str(v) for k, v in {**base, **props}.items()})


@pytest.fixture(autouse=True)
def own_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's processor locks, apart from those of the other test workers' tasks."""
    folder = tmp_path / "cpus"
    monkeypatch.setattr(affinity, "_FOLDER", folder)
    return folder


def _hold(folder: Path, cpu: int) -> int:
    """Hold a processor's lock as another process's task would (a descriptor of its own)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(folder / f"cpu{cpu}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _started_in(thread_body: Any) -> set[int]:
    """The processors of a thread started by the calling thread (read inside it)."""
    seen: list[set[int]] = []
    t = threading.Thread(target=lambda: seen.append(thread_body()))
    t.start()
    t.join()
    return seen[0]


def test_consecutive_processes_of_a_command_get_different_processors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(affinity, "_ALL", (0, 1, 2))
    assert [affinity.cpu_of(slot, 7) for slot in range(4)] == [1, 2, 0, 1]
    monkeypatch.setattr(affinity, "_ALL", (5,))
    assert affinity.cpu_of(0, 7) is None  # one processor: nothing to keep to


@needs_two
def test_a_task_keeps_its_threads_on_one_processor_and_gives_them_back() -> None:
    cpu = affinity.cpu_of(0, os.getpid())
    with affinity.pinned(_conf()):
        assert os.sched_getaffinity(0) == {cpu}
        assert _started_in(lambda: os.sched_getaffinity(0)) == {cpu}  # the threads it starts too
        with affinity.pinned(_conf()):  # another task of the process beside it: the same processor
            assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == set(CPUS)
    with affinity.pinned(_conf(**{"mapreduce.task.pin.cpu": False})):
        assert os.sched_getaffinity(0) == set(CPUS)


@needs_two
def test_a_processor_another_process_holds_is_passed_over(own_locks: Path) -> None:
    first = affinity.cpu_of(0, os.getpid())
    held = [_hold(own_locks, first)]
    try:
        with affinity.pinned(_conf()):
            assert os.sched_getaffinity(0) == {CPUS[(CPUS.index(first) + 1) % len(CPUS)]}
        held += [_hold(own_locks, cpu) for cpu in CPUS if cpu != first]
        with affinity.pinned(_conf()):  # every processor is another's: the kernel places the threads
            assert os.sched_getaffinity(0) == set(CPUS)
    finally:
        for fd in held:
            os.close(fd)
    with affinity.pinned(_conf()):  # given back: the first choice again
        assert os.sched_getaffinity(0) == {first}


@needs_two
def test_a_processor_that_cannot_be_had_leaves_the_task_to_the_kernel(own_locks: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.sched_setaffinity

    def refused(pid: int, cpus: Any) -> None:
        if len(set(cpus)) == 1:
            raise OSError(22, "Invalid argument")  # as when a cpuset took the processor away
        real(pid, cpus)

    monkeypatch.setattr(os, "sched_setaffinity", refused)
    ran = []
    with affinity.pinned(_conf()):
        ran.append(os.sched_getaffinity(0))
    assert ran == [set(CPUS)]
    monkeypatch.setattr(os, "sched_setaffinity", real)
    first = affinity.cpu_of(0, os.getpid())
    fd = _hold(own_locks, first)  # its lock was given back: another process can take it
    os.close(fd)


@needs_two
def test_a_lock_folder_that_is_a_link_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    monkeypatch.setattr(affinity, "_FOLDER", link)
    with affinity.pinned(_conf()):
        assert os.sched_getaffinity(0) == set(CPUS)
    assert list(elsewhere.iterdir()) == []


@needs_two
def test_a_program_started_from_a_task_gets_every_processor() -> None:
    show = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with affinity.pinned(_conf()):
        pinned_child = subprocess.run(show, capture_output=True, text=True, check=True).stdout
        with affinity.unpinned():
            free_child = subprocess.run(show, capture_output=True, text=True, check=True).stdout
        assert len(os.sched_getaffinity(0)) == 1  # the task's thread keeps to its processor after
    assert pinned_child.strip() != str(CPUS) and free_child.strip() == str(CPUS)


def _where(conf: Configuration, tasks: int) -> list[tuple[int, list[int]]]:
    store = open_store(conf, "aff", create=True)
    try:
        job = TaskPlace(conf)
        make_runner(conf, tasks).run(job, store)
        return job.places
    finally:
        store.close()


_WHERE = """
import json, sys
from nutch2.config import Configuration
from tests.conftest import CONF_DIR
from tests.test_affinity import _where
props = json.loads(sys.argv[1])
print(json.dumps(_where(Configuration(CONF_DIR, props), int(sys.argv[2]))))
"""


def _where_in_a_command(tmp_path: Path, tasks: int, **props: object) -> list[tuple[int, list[int]]]:
    """_where in a fresh interpreter (a command: its own workers), whose processor locks are in tmp_path."""
    conf = {"http.agent.name": "nutch2-test", "storage.data.dir": str(tmp_path),
            **{k: str(v) for k, v in props.items()}}
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-c", _WHERE, json.dumps(conf), str(tasks)], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    return [(pid, cpus) for pid, cpus in json.loads(p.stdout.splitlines()[-1])]


@needs_two
def test_the_processes_runner_gives_its_tasks_processors_in_turn(tmp_path: Path) -> None:
    where = _where_in_a_command(tmp_path, 2, **{"mapreduce.framework.name": "processes"})
    assert len({pid for pid, _ in where}) == 2, where  # the command's own task, and a worker's
    assert all(len(cpus) == 1 for _, cpus in where) and where[0][1] != where[1][1], where
    free = _where_in_a_command(tmp_path, 2, **{"mapreduce.framework.name": "processes",
                                               "mapreduce.task.pin.cpu": False})
    assert all(cpus == CPUS for _, cpus in free), free


@needs_two
def test_the_local_runner_keeps_all_its_tasks_on_the_commands_processor(tmp_path: Path) -> None:
    where = _where(_conf(tmp_path, **{"mapreduce.framework.name": "local"}), 3)
    assert {tuple(cpus) for _, cpus in where} == {(affinity.cpu_of(0, os.getpid()),)}, where
    assert os.sched_getaffinity(0) == set(CPUS)


@needs_two
def test_a_browser_started_by_a_task_runs_on_every_processor() -> None:
    import psutil

    from nutch2.plugins.protocol_chromium.chromium import Browser, ChromiumSettings

    settings = ChromiumSettings.from_conf(_conf(**{"chromium.mode": "always", "chromium.binary": require_chromium()}))
    assert settings is not None
    with affinity.pinned(_conf()):
        browser = Browser(settings)
    try:
        procs = [psutil.Process(browser.proc.pid), *psutil.Process(browser.proc.pid).children(recursive=True)]
        assert procs and all(sorted(p.cpu_affinity()) == CPUS for p in procs), [p.cpu_affinity() for p in procs]
    finally:
        browser.close()
