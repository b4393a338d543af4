"""urlnormalizer-basic: Nutch's basic URL normalizer (scheme and host case, IDNA, default ports, percent-encoding,
dot segments, fragments and credentials dropped), the same for every scope."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlnormalizer-basic",
                {"url-normalizer": "nutch2.plugins.urlnormalizer_basic.normalizer:BasicURLNormalizer"},
                "the basic normal form of a URL")
