"""urlnormalizer-regex: rewrite URLs with the pattern/substitution rules of regex-normalize.xml
(urlnormalizer.regex.file, or inline in urlnormalizer.regex.rules; a scope's own file in
urlnormalizer.regex.file.<scope>), in Nutch's format and Java's regular expression syntax."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlnormalizer-regex",
                {"url-normalizer": "nutch2.plugins.urlnormalizer_regex.normalizer:RegexURLNormalizer"},
                "rewrite URLs by the regular expressions of regex-normalize.xml (session ids, default pages...)")
