"""The crawler's name as servers see it (the User-Agent header)."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.errors import ConfigError


def user_agent(conf: Configuration) -> str:
    """Nutch's agent string: name/version (description; url; email)."""
    name = conf.get_str("http.agent.name").strip()
    if not name:
        raise ConfigError("http.agent.name is empty: name your crawler in conf/nutch-site.toml "
                          "or with -D http.agent.name=MyBot")
    version = conf.get_str("http.agent.version").strip()
    extra = "; ".join(x for x in (conf.get_str("http.agent.description"), conf.get_str("http.agent.url"),
                                  conf.get_str("http.agent.email")) if x.strip())
    return f"{name}/{version}" + (f" ({extra})" if extra else "") if version else name

