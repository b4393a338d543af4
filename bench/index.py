"""Issue 36's figure: documents/s of the index job into OpenSearch (indexer-opensearch-1x) against Solr
(indexer-solr), for the same batch (python -m bench index). A side whose server is down is skipped."""

from __future__ import annotations

import re
import shutil
import sys
import urllib.request
import uuid

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _job_seconds, _put_rows, _tmp, _url_rows
from bench.measure import loadavg, run
from bench.web import generate_web, host_addr

SOLR_URL = "http://127.0.0.1:8983/solr/nutch"
OPENSEARCH_URL = "http://127.0.0.1:9200"


def _up(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).read()
        return True
    except Exception:  # noqa: BLE001 - any failure: not there
        return False


def _delete(crawl_id: str, index: str) -> None:
    """The run's documents out of the shared Solr core, the run's index out of OpenSearch."""
    import json

    for req in (urllib.request.Request(f"{SOLR_URL}/update?commit=true", method="POST",
                                       data=json.dumps({"delete": {"query": f"crawlId:{crawl_id}"}}).encode(),
                                       headers={"Content-Type": "application/json"}),
                urllib.request.Request(f"{OPENSEARCH_URL}/{index}", method="DELETE")):
        try:
            urllib.request.urlopen(req, timeout=60).read()
        except Exception:  # noqa: BLE001 - a side that was skipped has nothing to delete
            pass


def bench_index(quick: bool = False, runs: int = 1, rows: int | None = None) -> str:
    """One batch of fetched, parsed, updated rows indexed once into Solr, then once into OpenSearch."""
    n = rows or (200 if quick else 5000)
    content = (generate_web(4, 20).root / host_addr(0) / "p" / "1.html").read_bytes()
    sides = {"Solr": _up(f"{SOLR_URL}/admin/ping"), "OpenSearch": _up(f"{OPENSEARCH_URL}/_cluster/health")}
    lines = _header(f"index: documents/s into OpenSearch vs Solr, one batch of {n:,} pages "
                    f"({len(content) // 1024} KB HTML), sqlite",
                    "python -m bench index" + (" --quick" if quick else ""))
    lines += [f"The batch is written straight into sqlite, parsed and updated once; then `nutch2 index b1 -solr "
              f"{SOLR_URL}` and `nutch2 index b1 -opensearch {OPENSEARCH_URL}/<new index>` (one task each, the "
              "writers' default batches: solr.commit.size 250, max.bulk.docs 250). documents/s = documents / the index "
              "job's own elapsed time, which ends with Solr's commit or OpenSearch's refresh; the process wall time in "
              "brackets. The documents are deleted again afterwards.", "",
              "| index writer | documents | seconds | documents/s | load at start |", "|---|---|---|---|---|"]
    crawl_id = f"ib{uuid.uuid4().hex[:8]}"
    index = f"nutch2-bench-{crawl_id}"
    data = _tmp("index")
    rate: dict[str, float] = {}
    try:
        _put_rows(data, _url_rows(18777, n, 200, "b1", fetched_batch=n, content=content), crawl_id=crawl_id)
        for job in ("parse", "updatedb"):
            r = run(NUTCH2 + [job, "b1", "-crawlId", crawl_id] + _defines(data), cwd=REPO)
            if r.returncode != 0:
                raise RuntimeError(f"{job}: {r.stderr[-500:]}")
        for side, flag in (("Solr", ["-solr", SOLR_URL]), ("OpenSearch", ["-opensearch", f"{OPENSEARCH_URL}/{index}"])):
            if not sides[side]:
                lines.append(f"| {side} | skipped (not answering) | | | |")
                continue
            load = loadavg()
            r = run(NUTCH2 + ["index", "b1", "-crawlId", crawl_id, *flag] + _defines(data), cwd=REPO)
            m = re.search(r"^index: finished in ([\d.]+) s: .*\bindexed=(\d+)", r.stderr, re.M)
            if r.returncode != 0 or not m:
                raise RuntimeError(f"index into {side}: {r.stderr[-500:]}")
            seconds, docs = _job_seconds(m.group(1)), int(m.group(2))
            rate[side] = docs / seconds
            lines.append(f"| {side} | {docs:,} | {seconds:.1f} [{r.seconds:.1f}] | {rate[side]:.0f} | {load:.1f} |")
            print(lines[-1], file=sys.stderr, flush=True)
    finally:
        _delete(crawl_id, index)
        shutil.rmtree(data, ignore_errors=True)
    if len(rate) == 2:
        lines += ["", f"ratio OpenSearch / Solr: {rate['OpenSearch'] / rate['Solr']:.2f}x"]
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)
