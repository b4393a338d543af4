"""urlfilter-validator: drop URLs that are not well formed by Nutch's UrlValidator rules (scheme, host or IPv4
address, port, path, printable ASCII)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlfilter-validator", {"url-filter": "nutch2.plugins.urlfilter_validator.filter:UrlValidator"},
                "drop malformed URLs")
