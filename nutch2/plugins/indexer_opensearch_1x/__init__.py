"""indexer-opensearch-1x: documents into an OpenSearch index through the bulk API (Nutch's OpenSearch1xIndexWriter
and its index-writers.xml parameters: host, port, scheme, index, username, password, trust.store.*, key.store.*,
max.bulk.docs, max.bulk.size, exponential.backoff.millis, exponential.backoff.retries, bulk.close.timeout).
opensearch.url (-opensearch) names the cluster and the index instead of host, port, scheme and index. The index is
created with nutch2's mapping when it is missing; the job's final step refreshes it."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("indexer-opensearch-1x",
                {"index-writer": "nutch2.plugins.indexer_opensearch_1x.writer:OpenSearchIndexWriter"},
                "documents into OpenSearch")
