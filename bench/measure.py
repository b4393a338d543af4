"""Run a command, time it, and poll the peak RSS and PSS of its whole process tree (psutil, every 50 ms)."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RunResult:
    cmd: list[str]
    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    peak_pss_mb: float = 0.0  # proportional set size: pages shared by the tree's processes counted once
    cpu_seconds: float = 0.0  # user + system CPU of the command and every descendant it waited for


def tree_memory(proc) -> tuple[int, int]:
    """(RSS, PSS) of a process and all its descendants, in bytes. RSS counts a page shared by two processes of the
    tree (forked workers sharing what their parent loaded) twice; PSS splits it between them."""
    import psutil

    rss = pss = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0, 0
    for p in procs:
        try:
            info = p.memory_full_info()
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
        except psutil.Error:
            pass
    return rss, pss


def run(cmd: list[str], env: dict | None = None, cwd: str | Path | None = None, timeout: float = 3600,
        check: bool = True) -> RunResult:
    import psutil

    full_env = dict(os.environ, **(env or {}))
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"nutch2-bench-{os.getpid()}-{time.monotonic_ns()}"
    with open(f"{out_path}.out", "w+") as fo, open(f"{out_path}.err", "w+") as fe:
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=full_env, cwd=cwd)
        ps = psutil.Process(proc.pid)
        peak = peak_pss = 0
        stop = threading.Event()

        def poll() -> None:
            nonlocal peak, peak_pss
            while not stop.is_set():
                rss, pss = tree_memory(ps)
                peak, peak_pss = max(peak, rss), max(peak_pss, pss)
                stop.wait(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        seconds = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        stop.set()
        poller.join()
        fo.seek(0)
        fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    for suffix in (".out", ".err"):
        Path(f"{out_path}{suffix}").unlink(missing_ok=True)
    if check and rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc}\n--- stderr tail:\n{stderr[-3000:]}")
    return RunResult(cmd, seconds, peak / 2**20, rc, stdout, stderr, peak_pss / 2**20, cpu)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def machine() -> dict:
    import psutil

    load = os.getloadavg()
    return {
        "nproc": os.cpu_count(),
        "mem_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        "python": sys.version.split()[0],
    }


def loadavg() -> float:
    return os.getloadavg()[0]
