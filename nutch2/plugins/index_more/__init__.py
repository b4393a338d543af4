"""index-more: type (the MIME type and its two parts), contentLength and lastModified, as Nutch's index-more."""

from nutch2.plugins import Plugin

PLUGIN = Plugin("index-more", {"indexing-filter": "nutch2.plugins.index_more.filter:MoreIndexingFilter"},
                "content type, length and last-modified date")
