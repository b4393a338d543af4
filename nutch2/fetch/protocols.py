"""The Protocol extension point (Nutch's Protocol) and the protocol of a URL scheme (Nutch's ProtocolFactory): of
the active protocol plugins for the scheme, the one with the highest priority (protocol-chromium over
protocol-http, which it uses itself)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.plugin import Plugins, extension_class
from nutch2.plugin.extension import Extension

log = logging.getLogger(__name__)

# a resource a rendered page asks for: (url, until: a nutch2/mapred/clock.py deadline) -> (ProtocolOutput | None,
# refusal)
ResourceFetch = Callable[[str, float], Any]



class ProtocolSession:
    """One fetcher thread's connection state (its HTTP session, for instance); not shared between threads."""

    def fetch(self, url: str, *, modified_since_ms: int | None = None, etag: str | None = None,
              may_follow: Callable[[str], bool] | None = None, deadline: float | None = None) -> Any:
        """The URL's ProtocolOutput (nutch2/fetch/output.py); never raises: every outcome is a protocol status.
        ``may_follow(target)``: whether a redirect may be followed inline; ``deadline``: a clock.now() the
        request ends at, whatever its own limits."""
        raise NotImplementedError

    def close(self) -> None:
        """Release its connections."""


class Protocol(Extension):
    """protocol-*: fetches the URLs of its schemes (Nutch's Protocol). A fetch task opens it once (open), each
    fetcher thread takes a session; robots.txt is fetched through robots_session(). Of the active protocol plugins
    for a scheme, the one with the highest ``priority`` is used. A protocol may also render the pages it fetched
    (protocol-chromium): renders() says which, render() gives the rendered page, asking the fetch engine for the
    page's resources (through its host queues and robots.txt)."""

    point: ClassVar[str] = "protocol"
    schemes: ClassVar[tuple[str, ...]] = ()
    priority: ClassVar[int] = 0
    addresses: Any = None  # the address guard (nutch2.fetch.addresses.AddressPolicy) its connections pass, set
    # by the fetcher before open(); a protocol that cannot pass it on is still kept from refused hosts by the
    # fetcher's own check of every URL
    render_hosts: Any = None  # the crawl's hosts remembered as needing a browser (nutch2.fetch.renderhosts.
    # RenderHosts, chromium.mode=auto), set by the fetcher before open() from its store; None: this task only

    def open(self, stop_at: float | None, counters: Any) -> None:
        """Start for one task: ``stop_at`` (nutch2/mapred/clock.py's now()) ends every request, ``counters`` are
        the task's."""

    def session(self) -> ProtocolSession:
        raise NotImplementedError

    def robots_session(self) -> ProtocolSession:
        """A session for robots.txt requests (redirects reported, not followed; content capped)."""
        raise NotImplementedError

    def renders(self, url: str, out: Any) -> bool:
        return False

    def render(self, url: str, out: Any, resources: ResourceFetch) -> Any:
        raise NotImplementedError


def protocol_for(conf: Configuration, scheme: str = "http") -> Any:
    """The Protocol extension that fetches `scheme` URLs, built from the configuration (not opened)."""
    plugins = Plugins(conf)
    found = [(getattr(c, "priority", 0), pid) for pid in plugins.providing("protocol")
             if scheme in getattr(c := extension_class(pid, "protocol"), "schemes", ())]
    if not found:
        excludes = conf.get_str("plugin.excludes").strip()
        if excludes and re.fullmatch(excludes, "protocol-http"):  # the cause is there, not in plugin.includes
            raise ConfigError(f"no active protocol plugin fetches {scheme} URLs: plugin.excludes={excludes!r} takes "
                              "protocol-http out; narrow it")
        raise ConfigError(f"no active protocol plugin fetches {scheme} URLs: add protocol-http to plugin.includes")
    pid = max(found)[1]
    if pid != "protocol-chromium" and (conf.get_str("chromium.url.pattern").strip()
                                       or conf.get_str("chromium.hosts").strip()
                                       or conf.get_str("chromium.mode").strip().lower() not in ("", "listed")):
        log.warning("warning: chromium.url.pattern / chromium.hosts / chromium.mode are set but protocol-chromium "
                    "is not in plugin.includes: no page is rendered")
    return plugins.build_one("protocol", pid)
