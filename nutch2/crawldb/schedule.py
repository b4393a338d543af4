"""The FetchSchedule extension point and its core implementations, Nutch's DefaultFetchSchedule and
AdaptiveFetchSchedule (db.fetch.schedule.class names one of them or a fetch-schedule plugin). Times in ms,
intervals in s."""

from __future__ import annotations

from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.mapred import hangs
from nutch2.plugin.descriptor import PluginError
from nutch2.plugin.extension import Extension, fix_hint
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage

SECONDS_PER_DAY = 86400
STATUS_UNKNOWN, STATUS_MODIFIED, STATUS_NOTMODIFIED = 0, 1, 2


class FetchSchedule(Extension):
    """When a row is fetched next (Nutch's FetchSchedule); times in ms, intervals in s."""

    point: ClassVar[str] = "fetch-schedule"

    def initialize(self, page: WebPage, now_ms: int) -> None:
        raise NotImplementedError

    def should_fetch(self, page: WebPage, cur_ms: int) -> bool:
        raise NotImplementedError

    def set_fetch_schedule(self, page: WebPage, prev_fetch_ms: int, prev_modified_ms: int, fetch_ms: int,
                           modified_ms: int, state: int) -> None:
        raise NotImplementedError

    def set_page_gone_schedule(self, page: WebPage, fetch_ms: int) -> None:
        raise NotImplementedError

    def set_page_retry_schedule(self, page: WebPage, fetch_ms: int) -> None:
        raise NotImplementedError


class DefaultFetchSchedule(FetchSchedule):
    """The default schedule: the next fetch is one interval after this one."""

    nutch_class = "org.apache.nutch.crawl.DefaultFetchSchedule"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.default_interval = conf.get_int("db.fetch.interval.default")
        self.max_interval = conf.get_int("db.fetch.interval.max")

    def initialize(self, page: WebPage, now_ms: int) -> None:
        """A new row: due now, default interval, no retries."""
        page.fetch_time = now_ms
        page.fetch_interval = self.default_interval
        page.retries_since_fetch = 0

    def should_fetch(self, page: WebPage, cur_ms: int) -> bool:
        """Due when fetch_time <= cur_ms; a fetch time absurdly far ahead (beyond max interval) is due too."""
        if page.fetch_time - cur_ms > self.max_interval * 1000:
            return True
        return page.fetch_time <= cur_ms

    def set_fetch_schedule(self, page: WebPage, prev_fetch_ms: int, prev_modified_ms: int, fetch_ms: int,
                           modified_ms: int, state: int) -> None:
        """After a successful fetch: next fetch one interval from this one."""
        interval = page.fetch_interval or self.default_interval
        page.fetch_interval = interval
        page.fetch_time = fetch_ms + interval * 1000
        page.modified_time = modified_ms
        page.prev_modified_time = prev_modified_ms
        page.retries_since_fetch = 0

    def set_page_gone_schedule(self, page: WebPage, fetch_ms: int) -> None:
        """A GONE page: back off, as Nutch's AbstractFetchSchedule: interval ×1.5 while that stays under the max,
        else 0.9 × max."""
        interval = max(page.fetch_interval, 1)
        page.fetch_interval = int(interval * 1.5 if interval * 1.5 < self.max_interval else self.max_interval * 0.9)
        page.fetch_time = fetch_ms + page.fetch_interval * 1000

    def set_page_retry_schedule(self, page: WebPage, fetch_ms: int) -> None:
        """A failed fetch to retry: one day later (at most db.fetch.interval.max: a fetch time beyond it counts as due
        at once, and the failing URL would be asked again every round), one more retry counted."""
        page.fetch_time = fetch_ms + min(SECONDS_PER_DAY, self.max_interval) * 1000
        page.retries_since_fetch = page.retries_since_fetch + 1


class AdaptiveFetchSchedule(DefaultFetchSchedule):
    """Shrinks the interval of pages that change and grows it for pages that do not."""

    nutch_class = "org.apache.nutch.crawl.AdaptiveFetchSchedule"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.inc_rate = conf.get_float("db.fetch.schedule.adaptive.inc_rate")
        self.dec_rate = conf.get_float("db.fetch.schedule.adaptive.dec_rate")
        self.min_interval = conf.get_float("db.fetch.schedule.adaptive.min_interval")
        self.max_adaptive = conf.get_float("db.fetch.schedule.adaptive.max_interval")
        self.sync_delta = conf.get_bool("db.fetch.schedule.adaptive.sync_delta")
        self.sync_delta_rate = conf.get_float("db.fetch.schedule.adaptive.sync_delta_rate")

    def set_fetch_schedule(self, page: WebPage, prev_fetch_ms: int, prev_modified_ms: int, fetch_ms: int,
                           modified_ms: int, state: int) -> None:
        if state == STATUS_MODIFIED:  # it changed since the last fetch, whatever its Last-Modified says (Nutch 1.x:
            modified_ms = fetch_ms  # a stale date synced a changing page's interval up to the max, as in Nutch 2.x)
        super().set_fetch_schedule(page, prev_fetch_ms, prev_modified_ms, fetch_ms, modified_ms, state)
        interval = float(page.fetch_interval)
        if modified_ms <= 0:
            modified_ms = fetch_ms
        if state == STATUS_MODIFIED:
            interval *= 1.0 - self.dec_rate
        elif state == STATUS_NOTMODIFIED:
            interval *= 1.0 + self.inc_rate
        if self.sync_delta:
            delta = (fetch_ms - modified_ms) / 1000.0
            if delta > interval:
                interval = delta
            # the shift back is of a delta at most max_interval long: a page unchanged for longer (Nutch: 3.3 years
            # at rate 0.3) would otherwise be due before this fetch, and fetched again every round
            refetch_ms = fetch_ms - int(min(delta, self.max_adaptive) * self.sync_delta_rate * 1000)
        else:
            refetch_ms = fetch_ms
        interval = min(max(interval, self.min_interval), self.max_adaptive)
        page.fetch_interval = int(interval)
        page.fetch_time = refetch_ms + int(interval * 1000)


def fetch_schedule(conf: Configuration) -> FetchSchedule:
    """The schedule db.fetch.schedule.class names: default, adaptive (Nutch's class names too), or the plugin id or
    class name of an active fetch-schedule plugin."""
    from nutch2.plugin import Plugins, extension_class

    name = conf.get_str("db.fetch.schedule.class").strip()
    short = name.rsplit(".", 1)[-1].lower()
    if short in ("default", "defaultfetchschedule"):
        return DefaultFetchSchedule(conf)
    if short in ("adaptive", "adaptivefetchschedule"):
        return AdaptiveFetchSchedule(conf)
    plugins = Plugins(conf)
    for pid in plugins.providing("fetch-schedule"):
        cls = extension_class(pid, "fetch-schedule")
        if name in (pid, cls.__name__, f"{cls.__module__}.{cls.__name__}", getattr(cls, "nutch_class", "")):
            return PluginSchedule(plugins.build_one("fetch-schedule", pid))
    raise ConfigError(f"db.fetch.schedule.class={name!r} is not known; use default, adaptive or an active "
                      "fetch-schedule plugin")


class PluginSchedule(FetchSchedule):
    """A fetch-schedule plugin, named when it raises (one line with the fix, not a traceback) or when a call does
    not return (nutch2/mapred/hangs.py, with the row's URL)."""

    def __init__(self, schedule: FetchSchedule) -> None:
        self.schedule, self.plugin_id = schedule, schedule.plugin_id or type(schedule).__name__
        hangs.start()  # a call that never returns is named with its URL (a dict store per call on its path)
        max_interval = getattr(schedule, "max_interval", None)  # the generator's due range reaches this far
        self.max_interval = int(max_interval if max_interval is not None
                                else schedule.conf.get_int("db.fetch.interval.max"))

    def initialize(self, page: WebPage, now_ms: int) -> None:
        _call(self.schedule, "initialize", page, now_ms)

    def should_fetch(self, page: WebPage, cur_ms: int) -> bool:
        return bool(_call(self.schedule, "should_fetch", page, cur_ms))

    def set_fetch_schedule(self, page: WebPage, prev_fetch_ms: int, prev_modified_ms: int, fetch_ms: int,
                           modified_ms: int, state: int) -> None:
        _call(self.schedule, "set_fetch_schedule", page, prev_fetch_ms, prev_modified_ms, fetch_ms, modified_ms,
              state)

    def set_page_gone_schedule(self, page: WebPage, fetch_ms: int) -> None:
        _call(self.schedule, "set_page_gone_schedule", page, fetch_ms)

    def set_page_retry_schedule(self, page: WebPage, fetch_ms: int) -> None:
        _call(self.schedule, "set_page_retry_schedule", page, fetch_ms)

    def close(self) -> None:
        self.schedule.close()


def _call(schedule: FetchSchedule, method: str, page: WebPage, *args: Any) -> Any:
    """schedule.method(page, *args); a schedule that raises ends the job in one line naming it."""
    url = unreverse_url(page.key)
    tid, outer = hangs.current()
    _calls[tid] = (_SITE, schedule, url, method)  # for hangs: the call a stuck thread is in
    try:
        return getattr(schedule, method)(page, *args)
    except Exception as e:  # noqa: BLE001 - the user's plugin: named, with the fix, instead of a traceback
        name = schedule.plugin_id or type(schedule).__name__
        raise PluginError(f"fetch schedule {name}: {method} raised {type(e).__name__}: {e} on {url}; "
                          f"{fix_hint(name)}") from e
    finally:
        hangs.leave(tid, outer)  # back to the call it was in (a site that called it), if any


_SITE = hangs.Site("fetch schedule", fix_hint)
_calls = hangs.calls
