"""index-basic: url (the representative URL of a redirect), host, site (the host and its parent domains down to the
registered domain, for site:), title and content (indexer.max.title.length / indexer.max.content.length), tstamp
(Nutch 2's fetch time: the next fetch after updatedb), fetched (when the content was fetched) and cache (the caching
policy of a noarchive/nocache page)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-basic", {"indexing-filter": "nutch2.plugins.index_basic.filter:BasicIndexingFilter"},
                "the basic fields of a document")
