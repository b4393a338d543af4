"""language-identifier: the language of a page (Nutch's plugin of that name). Its parse filter keeps it on the row
(metadata ``lang``), its indexing filter sends it as the field ``lang`` ("unknown" when none was found).

``lang.extraction.policy`` orders the two ways, as Nutch: *detect* reads what the document says (the first ``lang``
attribute of an HTML page, then ``<meta name="dc.language">``, then ``<meta http-equiv="content-language">``; a
document parser's language metadata; then the HTTP Content-Language header); *identify* asks a statistical model
about the title and text (their first ``lang.analyze.max.length`` characters). ``lang.identification.only.certain``
keeps an identified language only when the model gives it a probability of at least 0.9.
``lang.index.languages`` keeps pages of other languages out of the index.

The model is py3langid's (``pip install 'nutch2[langid]'``): langid.py's naive Bayes model of 97 languages, shipped
inside the wheel (nothing is downloaded at run time), deterministic (the same text always gives the same answer, so
every runner gives the same rows), fast (well under a millisecond for a page's first 2048 characters) and small
(a 4.5 MB model, about 130 MB of memory with numpy, loaded once per process), and maintained. lingua was measured
too: more accurate on short texts, but 1 GB of memory and many seconds to load its models for all languages.
"""

from nutch2.plugin import Plugin

PLUGIN = Plugin("language-identifier", {
    "parse-filter": "nutch2.plugins.language_identifier.parser:HTMLLanguageParser",
    "indexing-filter": "nutch2.plugins.language_identifier.indexer:LanguageIndexingFilter",
}, "the language of a page, on the row and in the index (lang)")
