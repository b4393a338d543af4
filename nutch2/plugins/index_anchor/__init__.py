"""index-anchor: the anchor texts of the page's inlinks (each once), field anchor."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-anchor", {"indexing-filter": "nutch2.plugins.index_anchor.filter:AnchorIndexingFilter"},
                "inlink anchors")
