"""index-xpath: the fields parse-xpath extracted (row metadata ``x_<field>``) as index fields ``x_<field>``, one
value each for what the expression found (the Solr configset's dynamic field ``x_*``, copied into ``text``)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-xpath", {"indexing-filter": "nutch2.plugins.index_xpath.filter:XPathIndexer"},
                "fields of parse-xpath into the index")
