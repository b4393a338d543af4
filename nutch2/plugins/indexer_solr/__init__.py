"""indexer-solr: documents into a Solr core (parameters: url, default solr.server.url or -solr; commitSize, default
solr.commit.size; timeout, default solr.timeout). Documents are sent in batches by each task and committed once by
the job's final step (solr.commit.index)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("indexer-solr", {"index-writer": "nutch2.plugins.indexer_solr.writer:SolrIndexWriter"},
                "documents into Solr")
