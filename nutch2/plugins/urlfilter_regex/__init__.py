"""urlfilter-regex: Nutch's regex URL filter (regex-urlfilter.txt, `urlfilter.regex.file`; host blocks of
NUTCH-1838): the first rule that matches accepts or rejects; a URL no rule matches is rejected."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlfilter-regex", {"url-filter": "nutch2.plugins.urlfilter_regex.filter:RegexURLFilter"},
                "regular expressions of regex-urlfilter.txt")
