"""index-metadata: row metadata and response headers as fields. index.metadata (Nutch 2) names meta tags kept by
parse-metatags, indexed as meta_<name>; index.parse.md (Nutch 1) names parse metadata keys, where Nutch's
"metatag.<name>" is nutch2's meta_<name>; index.content.md names response headers, indexed as header_<name>."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-metadata", {"indexing-filter": "nutch2.plugins.index_metadata.filter:MetadataIndexer"},
                "meta tags, parse metadata and response headers into the index")
