"""Bench-only dependencies: Python packages are pip-installed into the current environment on first use;
nginx and wrk come from Debian (installed with apt-get when running as root, else a clear message)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

PIP = {"psutil": "psutil", "scrapy": "scrapy"}
APT = {"nginx": "nginx-light", "wrk": "wrk"}


def compile_sources() -> None:
    """Compile nutch2's sources to bytecode, as pip does for an installed package (Scrapy's site-packages): where
    PYTHONDONTWRITEBYTECODE is set, every nutch2 process a benchmark starts would compile them again (~0.2 s)."""
    import compileall
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    for tree in ("nutch2", "stores", "jobs"):
        compileall.compile_dir(repo / tree, quiet=1, workers=0)


def ensure(need_scrapy: bool = True, need_wrk: bool = False) -> None:
    compile_sources()
    missing = [pkg for mod, pkg in PIP.items() if (need_scrapy or mod != "scrapy")
               and importlib.util.find_spec(mod) is None]
    if missing:
        print(f"bench: pip install {' '.join(missing)}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)
    tools = [t for t in ("nginx", "wrk") if (need_wrk or t != "wrk")
             and shutil.which(t) is None and not os.path.exists(f"/usr/sbin/{t}")]
    if tools:
        pkgs = [APT[t] for t in tools]
        if os.geteuid() == 0 and shutil.which("apt-get"):
            print(f"bench: apt-get install -y {' '.join(pkgs)}", file=sys.stderr)
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", *pkgs], check=True,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        else:
            raise SystemExit(f"bench: needs {' '.join(tools)}: sudo apt-get install -y {' '.join(pkgs)}")
