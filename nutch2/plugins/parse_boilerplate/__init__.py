"""parse-boilerplate: the main content of an HTML page (the article without its menus, ads, related links, cookie
banners, comments and footer), found by trafilatura (boilerplate.extractor; resiliparse is the faster, rougher
choice), kept beside the full text in the row's metadata as ``main_content``, with the title, author and date the
extractor finds as ``main_title``, ``main_author`` and ``main_date``. Its indexing filter sends them to the index as
the fields ``main_content``, ``main_author`` and ``main_date``; the Searcher's snippets come from ``main_content``
when a page has one."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-boilerplate",
                {"parse-filter": "nutch2.plugins.parse_boilerplate.filter:BoilerplateFilter",
                 "indexing-filter": "nutch2.plugins.parse_boilerplate.indexer:MainContentIndexer"},
                "the main content of a page (trafilatura) beside its full text, and into the index")
