"""The crawler's name as servers see it (the User-Agent header)."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.errors import ConfigError

_PARTS = ("http.agent.name", "http.agent.version", "http.agent.description", "http.agent.url", "http.agent.email")


def user_agent(conf: Configuration) -> str:
    """Nutch's agent string: name/version (description; url; email)."""
    name = conf.get_str("http.agent.name").strip()
    if not name:
        raise ConfigError("http.agent.name is empty: name your crawler in conf/nutch-site.toml "
                          "or with -D http.agent.name=MyBot")
    for key in _PARTS:  # what a header cannot carry would fail every request of the crawl, one by one
        bad = next((c for c in conf.get_str(key) if not " " <= c <= "~"), None)
        if bad is not None:
            raise ConfigError(f"{key} has the character {bad!r} (U+{ord(bad):04X}), which a User-Agent header "
                              "cannot carry: use printable ASCII, e.g. -D http.agent.name=MyBot")
    version = conf.get_str("http.agent.version").strip()
    extra = "; ".join(x for x in (conf.get_str("http.agent.description"), conf.get_str("http.agent.url"),
                                  conf.get_str("http.agent.email")) if x.strip())
    return f"{name}/{version}" + (f" ({extra})" if extra else "") if version else name

