"""index-more: type (the MIME type and its two parts, moreIndexingFilter.indexMimeTypeParts), contentLength,
lastModified (the Last-Modified header, else the row's modified time) and, for a document without a title, the
file name of its Content-Disposition header, as Nutch's index-more."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("index-more", {"indexing-filter": "nutch2.plugins.index_more.filter:MoreIndexingFilter"},
                "content type, length and last-modified date")
