"""parse-metatags: keeps the meta tags named in metatags.names (``*`` = all) of a parsed page, and the document
metadata a document parser gives under the same names (author, created, modified, language...), in the row's
metadata as ``meta_<name>``; index-metadata sends them to the index."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-metatags", {"parse-filter": "nutch2.plugins.parse_metatags.filter:MetaTagsParser"},
                "meta tags into the row")
