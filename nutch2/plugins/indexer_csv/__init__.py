"""indexer-csv: documents into CSV files, Nutch's CSVIndexWriter parameters (index-writers.xml): fields (columns,
default id,title,content), charset (UTF-8), separator (,), valuesep (| between the values of a multi-valued field),
quotechar ("), escapechar (the quotechar), maxfieldlength (4096), maxfieldvalues (12), header (true), outpath
(csvindexwriter). Each task writes its own part file; the job's commit makes them visible (nutch2.index.files)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("indexer-csv", {"index-writer": "nutch2.plugins.indexer_csv.writer:CSVIndexWriter"},
                "documents into CSV files")
