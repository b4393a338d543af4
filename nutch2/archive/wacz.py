"""WACZ 1.1.1 (Webrecorder's Web Archive Collection Zipped) of a `nutch2 warc` export, made by py-wacz (the `wacz`
package): archive/*.warc.gz (the export's files and the earlier files its revisits refer to), indexes/index.cdx.gz
with indexes/index.idx (py-wacz's compressed CDXJ), pages/pages.jsonl (the export's HTML pages: url, ts, title),
datapackage.json (every entry's sha256 and size) and datapackage-digest.json.

The package is written as `<FILE>.open` and renamed to FILE when complete.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from nutch2.errors import ConfigError, NutchError

log = logging.getLogger(__name__)

_OPEN = ".open"
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class Page:
    """One entry of pages/pages.jsonl: a fetched HTML page of the export."""

    url: str
    ts: str  # WARC-Date of its record in this export
    title: str | None


def require_wacz() -> None:
    """py-wacz comes with the warc extra: a clear line when it is missing."""
    try:
        import wacz  # noqa: F401
    except ImportError:
        raise ConfigError("-wacz needs py-wacz: pip install 'nutch2[warc]'") from None


def check_target(path: Path) -> None:
    """One line when `path` cannot become a WACZ file."""
    if path.suffix != ".wacz":
        raise NutchError(f"-wacz {path}: give a file name ending in .wacz")
    if path.is_dir():
        raise NutchError(f"-wacz {path} is a folder; give a file name ending in .wacz")


def write_wacz(target: Path, warcs: list[Path], pages: list[Page], title: str) -> int:
    """Package `warcs` with `pages` into `target` (replaced whole); the number of pages listed."""
    from wacz.main import main as wacz_main

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + _OPEN)
    listed = target.with_name(target.name + ".pages" + _OPEN)
    header = {"format": "json-pages-1.0", "id": "pages", "title": "Pages"}
    seen = set()
    with open(listed, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for page in sorted(pages, key=lambda p: (p.url, p.ts)):
            if (page.url, page.ts) in seen:
                continue
            seen.add((page.url, page.ts))
            entry = {"url": page.url, "ts": page.ts, **({"title": page.title} if page.title else {})}
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):
            code = wacz_main(["create", "-o", str(tmp), "-p", str(listed), "--title", title,
                              *[str(p) for p in warcs]])
        if code != 0:
            raise NutchError(f"-wacz {target}: py-wacz could not package the export ({_last(said)})")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        listed.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    for line in said.getvalue().splitlines():
        log.debug(f"py-wacz: {line}")
    return len(seen)


def _last(said: io.StringIO) -> str:
    lines = [line for line in said.getvalue().splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"
