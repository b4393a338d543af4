"""scoring-opic and the scoring filter chain: cash in metadata, injected/new rows, distribution over outlinks,
update, sort value, boost."""

from __future__ import annotations

import pytest

from nutch2.crawldb.scoring import ScoreDatum, ScoringFilters
from nutch2.plugins.scoring_opic.opic import OPICScoringFilter, get_cash, set_cash
from nutch2.rowkeys import CASH_KEY
from nutch2.webpage import WebPage
from tests.conftest import make_conf


def opic(tmp_path, **props) -> ScoringFilters:
    return ScoringFilters.from_conf(make_conf(tmp_path, "memory", **props))


def test_the_chain_is_the_active_scoring_plugins(tmp_path):
    assert [type(f) for f in opic(tmp_path).filters] == [OPICScoringFilter]
    none = opic(tmp_path, **{"plugin.excludes": "scoring-opic"})
    assert none.filters == []
    p = WebPage("k", score=3.0)
    assert none.generator_sort_value("http://a/", p, 3.0) == 3.0 and none.indexer_score("http://a/", {}, p) == 1.0


def test_cash_round_trip():
    p = WebPage("k")
    assert get_cash(p) == 0.0
    set_cash(p, 0.125)
    assert p.metadata[CASH_KEY] == b"0.125" and get_cash(p) == 0.125
    assert p.is_dirty("metadata")


def test_injected_and_initial(tmp_path):
    s = opic(tmp_path, **{"db.score.link.new": 0.3})
    p = WebPage("k", score=2.5)
    s.injected_score("http://a/", p)
    assert p.score == 2.5 and get_cash(p) == 2.5
    q = WebPage("k2")
    s.initial_score("http://a/b", q)
    assert q.score == 0.3 and get_cash(q) == 0.0


def test_sort_value_and_boost(tmp_path):
    s = opic(tmp_path)
    p = WebPage("k", score=3.0)
    assert s.generator_sort_value("http://a/", p, p.score) == 9.0
    assert s.indexer_score("http://a/", {}, p) == pytest.approx(3.0 ** 0.5)
    assert s.indexer_score("http://a/", {}, WebPage("k", score=-1.0)) == 0.0
    assert opic(tmp_path, **{"indexer.score.power": 1.0}).indexer_score("http://a/", {}, p) == 3.0


def test_distribute(tmp_path):
    s = opic(tmp_path, **{"db.score.link.internal": 1.0, "db.score.link.external": 0.5})
    p = WebPage("k")
    set_cash(p, 1.2)
    links = [ScoreDatum("http://a.com/x"), ScoreDatum("http://b.com/"), ScoreDatum("http://a.com/y")]
    s.distribute_score_to_outlinks("http://a.com/", p, links)
    assert [d.score for d in links] == pytest.approx([0.4, 0.2, 0.4])
    assert get_cash(p) == 0.0
    # no outlinks: cash is kept
    q = WebPage("k")
    set_cash(q, 1.0)
    s.distribute_score_to_outlinks("http://a.com/", q, [])
    assert get_cash(q) == 1.0


def test_update(tmp_path):
    s = opic(tmp_path)
    p = WebPage("k", score=1.0)
    set_cash(p, 0.5)
    s.update_score("http://a/", p, [ScoreDatum("http://b/", score=x) for x in (0.25, 0.25, 0.5)])
    assert p.score == pytest.approx(2.0) and get_cash(p) == pytest.approx(1.5)
    q = WebPage("k", score=1.0)
    q.clear_dirty()
    s.update_score("http://a/", q, [])
    assert q.score == 1.0 and not q.is_dirty()  # nothing received: the row is not rewritten
