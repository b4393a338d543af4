"""OPIC scoring: cash in metadata, injected/new rows, distribution over outlinks, update, sort value, boost."""

from __future__ import annotations

import pytest

from nutch2.crawldb.scoring import CASH_KEY, OpicScoring, get_cash, set_cash
from nutch2.webpage import WebPage
from tests.conftest import make_conf


def opic(tmp_path, **props) -> OpicScoring:
    return OpicScoring(make_conf(tmp_path, "memory", **props))


def test_cash_round_trip():
    p = WebPage("k")
    assert get_cash(p) == 0.0
    set_cash(p, 0.125)
    assert p.metadata[CASH_KEY] == b"0.125" and get_cash(p) == 0.125
    assert p.is_dirty("metadata")


def test_injected_and_initial(tmp_path):
    s = opic(tmp_path, **{"db.score.link.new": 0.3})
    p = WebPage("k")
    s.injected(p, 2.5)
    assert p.score == 2.5 and get_cash(p) == 2.5
    q = WebPage("k2")
    s.initial(q)
    assert q.score == 0.3 and get_cash(q) == 0.0


def test_sort_value_and_boost():
    p = WebPage("k", score=3.0)
    assert OpicScoring.sort_value(p) == 9.0
    assert OpicScoring.index_boost(p) == pytest.approx(3.0 ** 0.5)
    assert OpicScoring.index_boost(WebPage("k", score=-1.0)) == 0.0


def test_distribute(tmp_path):
    s = opic(tmp_path, **{"db.score.link.internal": 1.0, "db.score.link.external": 0.5})
    p = WebPage("k")
    set_cash(p, 1.2)
    shares = s.distribute(p, [True, False, True])
    assert shares == pytest.approx([0.4, 0.2, 0.4])
    assert get_cash(p) == 0.0
    # no outlinks: cash is kept
    q = WebPage("k")
    set_cash(q, 1.0)
    assert s.distribute(q, []) == [] and get_cash(q) == 1.0


def test_update(tmp_path):
    p = WebPage("k", score=1.0)
    set_cash(p, 0.5)
    OpicScoring.update(p, [0.25, 0.25, 0.5])
    assert p.score == pytest.approx(2.0) and get_cash(p) == pytest.approx(1.5)
    q = WebPage("k", score=1.0)
    q.clear_dirty()
    OpicScoring.update(q, [])
    assert q.score == 1.0 and not q.is_dirty()  # nothing received: the row is not rewritten
