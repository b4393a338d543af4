"""indexer-jsonl: documents into JSON Lines files, one JSON object per document (UTF-8; a multi-valued field is a
list). Parameter: outpath (jsonlindexwriter). Each task writes its own part file; the job's commit makes them
visible (nutch2.index.files)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("indexer-jsonl", {"index-writer": "nutch2.plugins.indexer_jsonl.writer:JSONLinesIndexWriter"},
                "documents into JSON Lines files")
