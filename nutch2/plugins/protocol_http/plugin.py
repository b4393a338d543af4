"""protocol-http: the Protocol extension (settings from the configuration, a cookie jar per task, a session per
fetcher thread)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from nutch2.config import Configuration
from nutch2.fetch.agent import user_agent
from nutch2.fetch.protocols import Protocol
from nutch2.fetch.robots import ROBOTS_MAX_BYTES
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from nutch2.plugins.protocol_http.netconf import auth_settings, proxy_settings

if TYPE_CHECKING:
    from http.cookiejar import CookieJar


def http_settings(conf: Configuration, stop_at: float | None = None) -> HttpSettings:
    """The HTTP settings from the configuration (a bad value is a one-line ConfigError)."""
    return HttpSettings(
        agent=user_agent(conf),
        timeout_ms=conf.get_int("http.timeout"),
        content_limit=conf.get_int("http.content.limit"),
        inflate_limit=conf.get_int("http.content.inflate.limit"),
        redirect_max=conf.get_int("http.redirect.max"),
        accept=conf.get_str("http.accept"),
        accept_language=conf.get_str("http.accept.language"),
        stop_at=stop_at,
        proxy=proxy_settings(conf),
        auth=auth_settings(conf),
        cookies=conf.get_bool("http.enable.cookie.header"),
        http2=conf.get_bool("http.useHttp2"),
    )


class Http(Protocol):
    nutch_class = "org.apache.nutch.protocol.http.Http"
    schemes = ("http", "https")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = http_settings(conf)  # checked here: a bad value stops the job before any task
        self.cookies: CookieJar | None = None

    def open(self, stop_at: float | None, counters: Any) -> None:
        self.settings = dataclasses.replace(self.settings, stop_at=stop_at)  # requests in flight end there too
        if self.settings.cookies:  # the task's jar, for its threads (it locks itself)
            from http.cookiejar import CookieJar

            self.cookies = CookieJar()
        else:
            self.cookies = None

    def session(self) -> HttpProtocol:
        return HttpProtocol(self.settings, self.cookies, self.addresses)

    def robots_session(self) -> HttpProtocol:
        return HttpProtocol(dataclasses.replace(self.settings, redirect_max=0, content_limit=ROBOTS_MAX_BYTES),
                            addresses=self.addresses)
