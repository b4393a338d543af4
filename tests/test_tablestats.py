"""readdb -stats' counting (nutch2/crawldb/tablestats.py): a Tally of rows gives the same TableStats as counting
each row by name would, hosts named from the row keys (ports dropped, IPv6 hosts kept whole)."""

from __future__ import annotations

from collections import Counter

from nutch2.crawldb.tablestats import Tally, from_aggregate, status_name
from nutch2.stores.query import Aggregate
from nutch2.urls.tableutil import host_of_key
from nutch2.webpage import WebPage

KEYS = ["com.example.www:http/a", "com.example.www:https/b", "com.example:http:8080/c", "[::1]:http:8983/solr",
        "org.nutch:http/"]


def _pages() -> list[WebPage]:
    return [WebPage.from_store(k, {"status": 1 + i % 2, "retries_since_fetch": i % 3, "score": float(i)})
            for i, k in enumerate(KEYS)] + [WebPage.from_store("org.nutch:http/x", {})]  # every field its default


def test_a_tally_counts_what_each_row_says() -> None:
    tally = Tally(per_host=True)
    for page in _pages():
        tally.add(page)
    st = tally.stats()
    assert st.total == 6
    assert st.status == {status_name(1): 3, status_name(2): 2, status_name(0): 1}  # the default status named too
    assert st.retries == {0: 3, 1: 2, 2: 1}
    assert (st.score_min, st.score_max, st.score_sum) == (0.0, 4.0, 10.0)
    assert st.hosts == Counter(host_of_key(p.key) for p in _pages())  # what counting a row by its host name gives
    assert st.hosts == {"www.example.com": 2, "example.com": 1, "[::1]": 1, "nutch.org": 2}


def test_without_hosts_and_without_rows() -> None:
    tally = Tally(per_host=False)
    for page in _pages():
        tally.add(page)
    assert tally.stats().hosts == {}
    empty = Tally(per_host=True).stats()
    assert (empty.total, empty.score_min, empty.score_max, empty.hosts) == (0, None, None, {})


def test_a_stores_aggregate_is_named_as_a_tally_is() -> None:
    agg = Aggregate(total=2, status={2: 2}, retries={0: 2}, score_sum=1.5, score_min=0.5, score_max=1.0,
                    hosts={"com.example.www": 1, "[::1]": 1})
    st = from_aggregate(agg)
    assert (st.total, dict(st.status), dict(st.hosts)) == (2, {"FETCHED": 2}, {"www.example.com": 1, "[::1]": 1})
