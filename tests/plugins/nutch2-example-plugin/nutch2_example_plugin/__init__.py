"""example-wordcount: the number of words of a page's text (words of example.wordcount.min.length characters or
more), kept on the row by a parse filter and indexed by an indexing filter as the field example.wordcount.field.

This module holds only the descriptor: nutch2 reads it to list the plugin and its properties, and imports the
classes it names only when the plugin is used."""

from nutch2.plugin import Plugin

PLUGIN = Plugin(
    "example-wordcount",
    {
        "parse-filter": "nutch2_example_plugin.wordcount:WordCountParseFilter",
        "indexing-filter": "nutch2_example_plugin.wordcount:WordCountIndexingFilter",
    },
    "the number of words of a page, on the row and in the index",
    # the plugin's own properties and their defaults: -D, nutch-site.toml and nutch-site.xml may set them
    properties={"example.wordcount.min.length": 1, "example.wordcount.field": "words_i"},
)
