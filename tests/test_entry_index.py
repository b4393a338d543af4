"""EntryIndex's reads over a small in-memory EntryStorage: rows read ahead, and stale entries judged by the time
of the read (the stores' own tests run the index against Cassandra and HBase)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from nutch2.marks import Mark
from nutch2.stores import index as index_mod
from nutch2.stores.index import CHUNK, READ_AHEAD, Entry, EntryIndex, EntryStorage, mark_bucket
from nutch2.stores.query import Query
from nutch2.webpage import WebPage


class Storage(EntryStorage):
    """Entries and rows in dicts; fetch_rows counts its calls and can be held."""

    def __init__(self, n: int, batch: str = "b1") -> None:
        self.stamp = int(time.time() * 1000)
        self.keys = [f"com.h{i:05d}:http/" for i in range(n)]
        self.entries = {Entry("m", mark_bucket(Mark.GENERATE.value, batch), "", k): self.stamp for k in self.keys}
        self.rows = {k: {"markers": {Mark.GENERATE.value: batch}} for k in self.keys}
        self.calls = 0
        self.called = threading.Condition()
        self.dropped: list[Entry] = []
        self.forgotten: list[tuple[str, str, int]] = []

    def put_entries(self, entries: list[Entry], stamp: int) -> None:
        self.entries.update(dict.fromkeys(entries, stamp))

    def scan_entries(self, index: str, bucket: str, shard: int, lo: str, hi: str, start: str | None,
                     end: str | None) -> Iterator[tuple[Entry, int]]:
        for e, s in sorted(self.entries.items()):
            if e.index == index and e.bucket == bucket and e.shard == shard:
                yield e, s

    def drop_entries(self, stale: list[tuple[Entry, int]]) -> None:
        self.dropped += [e for e, _ in stale]

    def buckets(self, index: str) -> list[str]:
        return sorted({e.bucket for e in self.entries if e.index == index})

    def forget_bucket(self, index: str, bucket: str, before: int) -> None:
        self.forgotten.append((index, bucket, before))

    def fetch_rows(self, keys: list[str], fields: tuple[str, ...]) -> dict[str, tuple[WebPage, int]]:
        with self.called:
            self.calls += 1
            self.called.notify_all()
        return {k: (WebPage.from_store(k, self.rows[k]), self.stamp) for k in keys if k in self.rows}

    def is_complete(self, index: str) -> bool:
        return True

    def set_complete(self, index: str) -> None:
        pass

    def scan_all(self, fields: tuple[str, ...]) -> Iterator[WebPage]:
        return iter(())


def batch(storage: Storage, **kw: object) -> Iterator[WebPage]:
    return EntryIndex(storage, 60_000).select(Query(("markers",), (Mark.GENERATE.value, "b1"), **kw))


def test_the_next_chunks_are_read_while_the_caller_holds_a_row() -> None:
    storage = Storage(CHUNK * (READ_AHEAD + 3))
    rows = batch(storage)
    first = next(rows)
    with storage.called:  # the caller has one row and does nothing: the reads of the chunks after go on
        assert storage.called.wait_for(lambda: storage.calls >= 1 + READ_AHEAD, timeout=10), storage.calls
    assert storage.calls == 1 + READ_AHEAD  # bounded: no more than that ahead
    keys = [first.key, *(p.key for p in rows)]
    assert keys == storage.keys  # every row once, in key order


def test_a_caller_that_stops_early_ends_the_reads() -> None:
    storage = Storage(CHUNK * 20)
    rows = batch(storage)
    next(rows)
    rows.close()
    calls = storage.calls
    time.sleep(0.1)
    assert calls <= 1 + READ_AHEAD and storage.calls == calls
    assert not [t for t in threading.enumerate() if t.name.startswith("index-read")]


def test_a_limit_reads_no_chunk_ahead() -> None:
    storage = Storage(CHUNK * 5)
    assert [p.key for p in batch(storage, limit=3)] == storage.keys[:3]
    assert storage.calls == 1


def test_an_entry_is_judged_by_the_time_of_its_rows_read(monkeypatch) -> None:
    """A row read before its write could have ended does not make the entry stale, however long the read took
    (the write's entries are made first; an entry is old only against the time the row was read)."""
    storage = Storage(1)
    key = storage.keys[0]
    storage.rows[key] = {"markers": {}}  # the row's write, with the mark, is still in flight
    storage.stamp -= 1  # the row as read is older than its entry
    clock = [time.time()]
    monkeypatch.setattr(index_mod.time, "time", lambda: clock[0])
    fetch = storage.fetch_rows

    def slow_fetch(keys: list[str], fields: tuple[str, ...]) -> dict[str, tuple[WebPage, int]]:
        out = fetch(keys, fields)
        clock[0] += 120  # the read took two minutes: longer than a write may be in flight
        return out

    storage.fetch_rows = slow_fetch  # type: ignore[method-assign]
    assert list(batch(storage)) == []
    assert storage.dropped == []  # kept: its row may be written yet


def test_a_limited_read_of_a_finished_batch_reads_its_entries_a_chunk_at_a_time() -> None:
    """Every row lost the mark (updatedb ended the batch): a limit=1 read, as mark_values makes, finds no row and
    drops every entry, reading rows in growing chunks rather than one get per entry (a continuous crawl's restart
    read every fetched row of every batch since one by one)."""
    storage = Storage(3000)
    for row in storage.rows.values():
        row["markers"] = {}
    assert list(batch(storage, limit=1)) == []
    assert sorted(storage.dropped) == sorted(storage.entries)
    assert storage.calls <= 9 + 3000 // CHUNK + 1  # chunks of 1, 2, 4 ... CHUNK, then CHUNK at a time
    live = Storage(3000)  # the first entry's row carries the mark: one get of one row, as before
    assert [p.key for p in batch(live, limit=1)] == live.keys[:1] and live.calls == 1


def test_mark_values_forgets_a_bucket_left_without_entries() -> None:
    storage = Storage(300)
    for row in storage.rows.values():
        row["markers"] = {}
    index = EntryIndex(storage, 60_000)
    before = int(time.time() * 1000)
    assert index.mark_values(Mark.GENERATE.value) == set()
    [(idx, bucket, at)] = storage.forgotten
    assert (idx, bucket) == ("m", mark_bucket(Mark.GENERATE.value, "b1"))
    assert before - 60_000 <= at <= int(time.time() * 1000) - 60_000  # writes since the read began keep it
    # an entry whose row's write may still be in flight (newer than the row, younger than in_flight_ms): kept,
    # and its bucket with it
    pending = Storage(3)
    for row in pending.rows.values():
        row["markers"] = {}
    pending.entries = {e: pending.stamp + 1 for e in pending.entries}
    assert EntryIndex(pending, 60_000).mark_values(Mark.GENERATE.value) == set()
    assert pending.forgotten == [] and pending.dropped == []
