"""indexer-jsonl: the index writer."""

from __future__ import annotations

import json
from typing import Any

from nutch2.index.files import FileIndexWriter


class JSONLinesIndexWriter(FileIndexWriter):
    suffix = ".jsonl"
    default_outpath = "jsonlindexwriter"

    def record(self, doc: dict[str, Any]) -> bytes:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
