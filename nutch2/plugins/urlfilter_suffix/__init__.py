"""urlfilter-suffix: accept or reject URLs by how they end, from suffix-urlfilter.txt (urlfilter.suffix.file, or
inline in urlfilter.suffix.rules), in Nutch's format."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlfilter-suffix", {"url-filter": "nutch2.plugins.urlfilter_suffix.filter:SuffixURLFilter"},
                "accept or reject URLs by their suffix (.css, .jpg, ...)")
