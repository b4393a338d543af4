"""Fetch schedules: the default and adaptive math, retry/gone back-off, should_fetch."""

from __future__ import annotations

import pytest

from nutch2.crawldb.schedule import (
    STATUS_MODIFIED,
    STATUS_NOTMODIFIED,
    STATUS_UNKNOWN,
    AdaptiveFetchSchedule,
    DefaultFetchSchedule,
    fetch_schedule,
)
from nutch2.errors import ConfigError
from nutch2.webpage import WebPage
from tests.conftest import make_conf

DAY = 86400
T = 1_700_000_000_000  # a fetch time in ms


def conf(tmp_path, **props):
    return make_conf(tmp_path, "memory", **props)


def page(**fields) -> WebPage:
    fields.setdefault("fetch_interval", 30 * DAY)
    return WebPage("com.example:http/", **fields)


def test_factory(tmp_path):
    assert type(fetch_schedule(conf(tmp_path))) is DefaultFetchSchedule
    assert type(fetch_schedule(conf(tmp_path, **{"db.fetch.schedule.class": "adaptive"}))) is AdaptiveFetchSchedule
    assert type(fetch_schedule(conf(tmp_path, **{
        "db.fetch.schedule.class": "org.apache.nutch.crawl.AdaptiveFetchSchedule"}))) is AdaptiveFetchSchedule
    with pytest.raises(ConfigError, match="db.fetch.schedule.class"):
        fetch_schedule(conf(tmp_path, **{"db.fetch.schedule.class": "weekly"}))


def test_initialize(tmp_path):
    p = page(retries_since_fetch=4, fetch_interval=0)
    DefaultFetchSchedule(conf(tmp_path)).initialize(p, T)
    assert (p.fetch_time, p.fetch_interval, p.retries_since_fetch) == (T, 30 * DAY, 0)


def test_should_fetch(tmp_path):
    s = DefaultFetchSchedule(conf(tmp_path))
    assert s.should_fetch(page(fetch_time=T), T)
    assert s.should_fetch(page(fetch_time=T - 1), T)
    assert not s.should_fetch(page(fetch_time=T + 1), T)
    assert not s.should_fetch(page(fetch_time=T + 90 * DAY * 1000), T)  # exactly max interval: not absurd
    assert s.should_fetch(page(fetch_time=T + 90 * DAY * 1000 + 1), T)  # beyond: due now


def test_default_schedule(tmp_path):
    s = DefaultFetchSchedule(conf(tmp_path))
    for state in (STATUS_UNKNOWN, STATUS_MODIFIED, STATUS_NOTMODIFIED):
        p = page(retries_since_fetch=2, modified_time=5)
        s.set_fetch_schedule(p, T - DAY * 1000, 5, T, T - 10, state)
        assert p.fetch_interval == 30 * DAY and p.fetch_time == T + 30 * DAY * 1000
        assert p.retries_since_fetch == 0
        assert p.modified_time == T - 10 and p.prev_modified_time == 5
    p = page(fetch_interval=0)
    s.set_fetch_schedule(p, 0, 0, T, T, STATUS_UNKNOWN)
    assert p.fetch_interval == 30 * DAY  # missing interval: the default


def test_retry_and_gone(tmp_path):
    s = DefaultFetchSchedule(conf(tmp_path))
    p = page(retries_since_fetch=1)
    s.set_page_retry_schedule(p, T)
    assert p.fetch_time == T + DAY * 1000 and p.retries_since_fetch == 2 and p.fetch_interval == 30 * DAY
    p = page(fetch_interval=10 * DAY)
    s.set_page_gone_schedule(p, T)
    assert p.fetch_interval == 15 * DAY and p.fetch_time == T + 15 * DAY * 1000
    p = page(fetch_interval=70 * DAY)
    s.set_page_gone_schedule(p, T)
    assert p.fetch_interval == int(0.9 * 90 * DAY) and p.fetch_time == T + int(0.9 * 90 * DAY) * 1000
    p = page(fetch_interval=56 * DAY)  # x1.5 = 84 days: over 0.9 x max (81) but under the max, so kept as Nutch does
    s.set_page_gone_schedule(p, T)
    assert p.fetch_interval == 84 * DAY


def test_retry_waits_within_max_interval(tmp_path):
    """With db.fetch.interval.max under a day, a failed fetch is retried one max interval later, not due at once
    (a fetch time beyond the max is due: a crawl asked a failing URL again every round, ten times a second)."""
    s = DefaultFetchSchedule(conf(tmp_path, **{"db.fetch.interval.max": 120}))
    p = page(fetch_interval=5)
    s.set_page_retry_schedule(p, T)
    assert p.fetch_time == T + 120 * 1000 and p.retries_since_fetch == 1
    assert not s.should_fetch(p, T + 1000)
    assert s.should_fetch(p, T + 120 * 1000)


def adaptive(tmp_path, sync=False, **props):
    return AdaptiveFetchSchedule(conf(tmp_path, **{"db.fetch.schedule.adaptive.sync_delta": str(sync).lower()},
                                      **props))


@pytest.mark.parametrize("state,factor", [(STATUS_MODIFIED, 0.8), (STATUS_NOTMODIFIED, 1.4), (STATUS_UNKNOWN, 1.0)])
def test_adaptive_rates(tmp_path, state, factor):
    s = adaptive(tmp_path)
    p = page(fetch_interval=10 * DAY)
    s.set_fetch_schedule(p, 0, 0, T, T, state)
    assert p.fetch_interval == int(10 * DAY * factor)
    assert p.fetch_time == T + int(10 * DAY * factor) * 1000


def test_adaptive_clamped(tmp_path):
    s = adaptive(tmp_path)
    p = page(fetch_interval=70)
    s.set_fetch_schedule(p, 0, 0, T, T, STATUS_MODIFIED)
    assert p.fetch_interval == 60  # min_interval
    p = page(fetch_interval=300 * DAY)
    s.set_fetch_schedule(p, 0, 0, T, T, STATUS_NOTMODIFIED)
    assert p.fetch_interval == 365 * DAY  # adaptive max_interval


def test_adaptive_sync_delta(tmp_path):
    s = adaptive(tmp_path, sync=True)
    # unchanged, last modified 20 days before this fetch: the interval is at least that delta, and the next fetch
    # moves back by delta * sync_delta_rate
    p = page(fetch_interval=10 * DAY)
    modified = T - 20 * DAY * 1000
    s.set_fetch_schedule(p, 0, 0, T, modified, STATUS_NOTMODIFIED)
    assert p.fetch_interval == 20 * DAY
    assert p.fetch_time == T - int(20 * DAY * 0.3 * 1000) + 20 * DAY * 1000
    # changed, with a Last-Modified 20 days old (a server that does not update it): it changed since the last fetch,
    # so modified now, as Nutch 1.x's AdaptiveFetchSchedule: the interval shrinks (2.x synced it up to the delta)
    p = page(fetch_interval=10 * DAY)
    s.set_fetch_schedule(p, 0, 0, T, modified, STATUS_MODIFIED)
    assert p.fetch_interval == 8 * DAY and p.fetch_time == T + 8 * DAY * 1000 and p.modified_time == T
    # no Last-Modified known (0): treated as modified now, no shift
    p = page(fetch_interval=10 * DAY)
    s.set_fetch_schedule(p, 0, 0, T, 0, STATUS_MODIFIED)
    assert p.fetch_interval == 8 * DAY and p.fetch_time == T + 8 * DAY * 1000


def test_adaptive_sync_delta_of_a_page_unchanged_for_years_stays_ahead(tmp_path):
    """Unchanged for 5 years: Nutch's formula (fetch - 0.3 x 5 y + 365 d) is half a year before this fetch; the shift
    back is of a delta of at most max_interval, so the next fetch is 0.7 x 365 d ahead."""
    s = adaptive(tmp_path, sync=True)
    p = page(fetch_interval=30 * DAY)
    s.set_fetch_schedule(p, 0, 0, T, T - 5 * 365 * DAY * 1000, STATUS_NOTMODIFIED)
    assert p.fetch_interval == 365 * DAY
    assert p.fetch_time == T + round(0.7 * 365 * DAY * 1000)

