"""parse-tika: documents of any format Apache Tika reads (PDF, office files, EPUB, ...), parsed by a Tika server
over its REST API (tika.server.url; none: the plugin is not available and parse-plugins.xml's next parser is used)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-tika", {"parser": "nutch2.plugins.parse_tika.tika:TikaParser"},
                "text, metadata, embedded documents and links of any format, through a Tika server")
