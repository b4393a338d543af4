"""index-static: fields with fixed values on every document (Nutch's index.static, "field:value value,field:value",
split by index.static.fieldsep, index.static.keysep and index.static.valuesep)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-static", {"indexing-filter": "nutch2.plugins.index_static.filter:StaticFieldIndexer"},
                "fixed fields on every document")
