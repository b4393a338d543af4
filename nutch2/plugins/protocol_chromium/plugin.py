"""protocol-chromium: the Protocol extension: protocol-http fetches, chromium renders the pages it applies to (those
chromium.url.pattern / chromium.hosts name; with chromium.mode=auto also those the detector says need it and every
page of a host remembered for it; with chromium.mode=always every HTML page)."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.fetch.protocols import Protocol, ProtocolSession, ResourceFetch
from nutch2.plugin import Plugins
from nutch2.plugins.protocol_chromium.chromium import ChromiumSettings, Renderer


class Chromium(Protocol):
    nutch_class = "org.apache.nutch.protocol.selenium.Http"
    schemes = ("http", "https")
    priority = 10  # chosen over protocol-http when both are active: it uses protocol-http itself

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = ChromiumSettings.from_conf(conf)  # None: no page to render (no pattern, no hosts)
        self.http = Plugins(conf).build_one("protocol", "protocol-http")
        self.renderer: Renderer | None = None
        self.stop_at: float | None = None

    def open(self, stop_at: float | None, counters: Any) -> None:
        self.http.addresses = self.addresses  # the page's resources are fetched by protocol-http: the same guard
        self.http.open(stop_at, counters)
        self.stop_at = stop_at
        self.renderer = Renderer(self.settings, counters, self.render_hosts) if self.settings is not None else None

    def session(self) -> ProtocolSession:
        return self.http.session()

    def robots_session(self) -> ProtocolSession:
        return self.http.robots_session()

    def renders(self, url: str, out: Any) -> bool:
        if self.renderer is None or out.stopped:
            return False
        why = self.renderer.applies(url, out)
        if why is None:
            return False
        out.headers = {**out.headers, "X-Nutch2-Chromium-Why": why}  # kept with the rendered page's headers
        return True

    def render(self, url: str, out: Any, resources: ResourceFetch) -> Any:
        assert self.renderer is not None
        return self.renderer.render(url, out, resources, stop_at=self.stop_at)

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
        self.http.close()
