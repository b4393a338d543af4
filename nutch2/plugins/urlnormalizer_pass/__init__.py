"""urlnormalizer-pass: leaves every URL as it is (Nutch's choice for a scope that should not normalize)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlnormalizer-pass",
                {"url-normalizer": "nutch2.plugins.urlnormalizer_pass.normalizer:PassURLNormalizer"},
                "leave URLs unchanged")
