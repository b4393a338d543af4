"""clean and dedup over every index writer, against the real Solr and OpenSearch at once: a crawl indexed into both
keeps one of each duplicate pair (dedup on the table), no noindex page or redirect; indexed pages that became GONE,
a redirect, a meta refresh or noindex leave both indexes by one clean, and a duplicate found later by one dedup."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nutch2.index.solr import document_id
from nutch2.jobs.index import indexable
from nutch2.marks import Mark
from nutch2.rowkeys import NOINDEX_KEY
from nutch2.status import CrawlStatus, ParseMinor
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.conftest import OPENSEARCH_URL, SOLR_URL
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.testweb import TestWeb

opensearchpy = pytest.importorskip("opensearchpy")

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RUN = uuid.uuid4().hex[:8]
CRAWL = f"cd{RUN}"
INDEX = f"nutch2-test-{RUN}-cleandedup"
OS = f"{OPENSEARCH_URL}/{INDEX}"


def solr_ids() -> set[str]:
    r = requests.get(f"{SOLR_URL}/select", params={"q": "*:*", "fq": f"crawlId:{CRAWL}", "fl": "id", "rows": 10_000},
                     timeout=30)
    r.raise_for_status()
    return {d["id"] for d in r.json()["response"]["docs"]}


def opensearch_ids() -> set[str]:
    c = opensearchpy.OpenSearch([OPENSEARCH_URL], timeout=60)
    c.indices.refresh(index=INDEX)
    hits = c.search(index=INDEX, body={"query": {"match_all": {}}, "size": 10_000, "_source": ["id"]})["hits"]["hits"]
    return {h["_source"]["id"] for h in hits}


def ids(keys: Any) -> set[str]:
    return {document_id(CRAWL, k) for k in keys}


@pytest.fixture(scope="module")
def crawled(solr_up: str, opensearch_up: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    tmp = tmp_path_factory.mktemp("cleandedup")
    d = defines(tmp, "sqlite")
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=0.5) as web:
        assert cli("crawl", seed_file(tmp, web.seed_url), "-crawlId", CRAWL, "-rounds", "3", "-threads", "6",
                   "-solr", SOLR_URL, "-opensearch", OS, *d) == 0
        yield web, d, conf_for(tmp, "sqlite")
    requests.post(f"{SOLR_URL}/update?commit=true", json={"delete": {"query": f"crawlId:{CRAWL}"}}, timeout=30)
    opensearchpy.OpenSearch([OPENSEARCH_URL], timeout=60).indices.delete(index=INDEX, ignore_unavailable=True)


def test_a_crawl_keeps_one_of_each_duplicate_pair_in_both(crawled: tuple) -> None:
    web, _, conf = crawled
    table = rows(conf, CRAWL)
    pairs = [(u, s.duplicate_of) for u, s in web.pages.items() if s.duplicate_of and reverse_url(u) in table]
    assert pairs, "the crawl reached the duplicate pages"
    duplicates = {k for k, p in table.items() if p.status == CrawlStatus.DUPLICATE}
    assert len(duplicates) == len(pairs)
    for url, original in pairs:  # one of each pair is kept, the other marked
        assert len({reverse_url(url), reverse_url(original)} & duplicates) == 1
    expected = ids(k for k, p in table.items() if indexable(p))
    assert solr_ids() == expected and opensearch_ids() == expected
    assert not ids(duplicates) & (solr_ids() | opensearch_ids())
    left_out = [reverse_url(u) for u, s in web.pages.items() if not s.indexable and reverse_url(u) in table]
    redirects = [k for k, p in table.items() if p.status in (CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP)]
    assert left_out and redirects
    assert not ids(left_out + redirects) & (solr_ids() | opensearch_ids())


def test_a_page_gone_and_a_late_duplicate_leave_both_indexes(crawled: tuple) -> None:
    web, d, conf = crawled
    table = rows(conf, CRAWL)
    kept = sorted(k for k, p in table.items() if indexable(p) and k != reverse_url(web.seed_url))
    gone, moved, refresh, noindex, first, second = kept[:6]
    cleaned = [gone, moved, refresh, noindex]
    assert ids(cleaned + [first, second]) <= solr_ids() & opensearch_ids()
    with open_store(conf, CRAWL) as store:
        # what a refetch can turn an indexed page into: gone, a redirect (301), a meta refresh, a noindex page
        store.put(gone, _with(store.get(gone, ["status"]), status=int(CrawlStatus.GONE)))
        store.put(moved, _with(store.get(moved, ["status"]), status=int(CrawlStatus.REDIR_PERM)))
        page = store.get(refresh, ["parse_status"])
        page.parse_status.minor_code = int(ParseMinor.REDIRECT)
        page.mark_dirty("parse_status")
        store.put(refresh, page)
        page = store.get(noindex, ["metadata"])
        page.metadata[NOINDEX_KEY] = b"y"
        page.mark_dirty("metadata")
        store.put(noindex, page)
        twin = store.get(first, ["signature"]).signature
        store.put(second, _with(store.get(second, ["signature"]), signature=twin))
    assert cli("clean", "-crawlId", CRAWL, "-solr", SOLR_URL, "-opensearch", OS, *d) == 0
    assert not ids(cleaned) & (solr_ids() | opensearch_ids())
    assert ids([first, second]) <= solr_ids() & opensearch_ids()  # clean leaves the rest
    after = rows(conf, CRAWL)
    assert all(Mark.INDEX.check(after[k]) is None for k in cleaned)
    # the page now shares a signature with another: dedup marks one of them and deletes it from both writers
    assert cli("dedup", "-crawlId", CRAWL, "-solr", SOLR_URL, "-opensearch", OS, *d) == 0
    after = rows(conf, CRAWL)
    loser = next(k for k in (first, second) if after[k].status == CrawlStatus.DUPLICATE)
    winner = second if loser == first else first
    assert after[winner].status == CrawlStatus.FETCHED
    assert document_id(CRAWL, loser) not in solr_ids() | opensearch_ids()
    assert document_id(CRAWL, winner) in solr_ids() & opensearch_ids()
    assert Mark.INDEX.check(after[loser]) is None


def _with(page: Any, **values: Any) -> Any:
    for name, value in values.items():
        setattr(page, name, value)
    return page
