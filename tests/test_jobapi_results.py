"""What a job of the API that reads the table says: readhostdb and readdb -url give their result as JSON (the
hosts' datums, the row) and one short line as their message, rather than their last output line (one host's
datum, or the row's page text)."""

from __future__ import annotations

from pathlib import Path

from nutch2.searcher.jobapi import JobManager
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, seed_file

CRAWL = "results"
TEXT = "A page's text, long enough to fill a screen. " * 40


def _done(manager: JobManager, job: str, args: dict) -> dict:
    info = manager.submit(job, args)
    assert info.thread is not None
    info.thread.join(120)
    out = info.to_json()
    assert out["state"] == "FINISHED", out
    return out


def test_readhostdb_and_readdb_url_jobs_say_a_summary_and_give_json(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite:local")
    conf = conf_for(tmp_path, "sqlite:local")
    urls = ["http://a.example.com/", "http://a.example.com/x", "http://b.example.com/", "http://c.example.com/"]
    assert cli("inject", seed_file(tmp_path, *urls), "-crawlId", CRAWL, *d) == 0
    with open_store(conf, CRAWL) as store:
        page = store.get(reverse_url(urls[1]))
        page.text = TEXT
        store.put(page.key, page)
        store.flush()
    assert cli("updatehostdb", "-crawlId", CRAWL, *d) == 0
    manager = JobManager(conf, CRAWL)

    every = _done(manager, "readhostdb", {})
    assert every["msg"] == "readhostdb: 3 hosts"
    assert every["result"]["hostCount"] == 3
    assert [h["host"] for h in every["result"]["hosts"]] == ["a.example.com", "b.example.com", "c.example.com"]
    assert every["result"]["hosts"][0]["numRecords"] == 2
    some = _done(manager, "readhostdb", {"expr": "numRecords > 1"})
    assert some["msg"] == "readhostdb: 1 host of 3 match numRecords > 1"
    assert [h["host"] for h in some["result"]["hosts"]] == ["a.example.com"] and some["result"]["hostCount"] == 1
    one = _done(manager, "readhostdb", {"get": "b.example.com"})
    assert one["msg"] == "readhostdb: 1 host" and one["result"]["hosts"][0]["host"] == "b.example.com"

    row = _done(manager, "readdb", {"url": urls[1]})
    assert row["msg"].startswith(f"readdb: {urls[1]}: INJECTED, next fetch "), row["msg"]
    assert len(row["msg"]) < 120
    assert row["result"]["row"]["url"] == urls[1] and row["result"]["row"]["text"] == TEXT
