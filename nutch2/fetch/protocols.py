"""The protocol of a URL scheme (Nutch's ProtocolFactory): of the active protocol plugins for the scheme, the one
with the highest priority (protocol-chromium over protocol-http, which it uses itself)."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.logs import warning
from nutch2.plugins import Plugins, extension_class


def protocol_for(conf: Configuration, scheme: str = "http") -> Any:
    """The Protocol extension that fetches `scheme` URLs, built from the configuration (not opened)."""
    plugins = Plugins(conf)
    found = [(getattr(c, "priority", 0), pid) for pid in plugins.providing("protocol")
             if scheme in getattr(c := extension_class(pid, "protocol"), "schemes", ())]
    if not found:
        raise ConfigError(f"no active protocol plugin fetches {scheme} URLs: add protocol-http to plugin.includes")
    pid = max(found)[1]
    if pid != "protocol-chromium" and (conf.get_str("chromium.url.pattern").strip()
                                       or conf.get_str("chromium.hosts").strip()):
        warning("warning: chromium.url.pattern / chromium.hosts are set but protocol-chromium is not in "
                "plugin.includes: no page is rendered")
    return plugins.build_one("protocol", pid)
