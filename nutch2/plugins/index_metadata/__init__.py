"""index-metadata: the row's meta tags kept by parse-metatags (index.metadata names them), as fields
meta_<name> (a value with tabs is several values)."""

from nutch2.plugins import Plugin

PLUGIN = Plugin("index-metadata", {"indexing-filter": "nutch2.plugins.index_metadata.filter:MetadataIndexer"},
                "meta tags into the index")
