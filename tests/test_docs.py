"""The design documents stay true: every path docs/ARCHITECTURE.md and CONTRIBUTING.md name exists, README's Layout
names every top-level folder and every package of nutch2/, and nothing in the repository points outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = ("docs/ARCHITECTURE.md", "CONTRIBUTING.md")
# a path-looking name in backticks: folders end in /, files have a known extension
_PATH = re.compile(r"`((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+(?:/|\.(?:py|md|toml|sh|txt|xml)))`")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


USER_FILES = {"nutch-site.toml", "nutch-site.xml"}  # files a user writes, named by the docs
BASES = ("", "nutch2", "nutch2/plugins", "stores", "tests", "conf")  # where a short name may start


def resolve(name: str) -> bool:
    """A name as the docs write it: from the repo root, or short for a file of nutch2/ (`fetch/queues.py`), of
    nutch2/plugins/, stores/, tests/ or conf/."""
    name = name.rstrip("/")
    return name in USER_FILES or any((REPO / base / name).exists() for base in BASES)


def test_named_paths_exist() -> None:
    missing = []
    for doc in DOCS:
        text = (REPO / doc).read_text(encoding="utf-8")
        for name in _PATH.findall(text):
            if not resolve(name):
                missing.append(f"{doc}: {name}")
    assert not missing, "paths named in the docs that do not exist: " + ", ".join(missing)


def test_readme_layout_lists_the_tree() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):]
    top = {f.split("/")[0] for f in tracked() if "/" in f and not f.startswith(".")}
    packages = {p.name for p in (REPO / "nutch2").iterdir() if (p / "__init__.py").is_file()}
    missing = [f"{t}/" for t in sorted(top) if f"`{t}/`" not in layout]
    missing += [f"nutch2/{p}/" for p in sorted(packages) if f"`{p}/`" not in layout]
    assert not missing, "README's Layout does not name: " + ", ".join(missing)


def test_nothing_points_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|/work/")
    found = []
    for name in tracked():
        path = REPO / name
        if path.suffix in {".py", ".md", ".toml", ".sh", ".txt", ".xml", ".yml", ".java"} and path.is_file():
            if outside.search(path.read_text(encoding="utf-8", errors="replace")):
                found.append(name)
    found = [f for f in found if f != "tests/test_docs.py"]
    assert not found, "files that point outside the repository: " + ", ".join(found)
