"""parse-xpath: fields extracted from HTML pages by XPath or CSS selectors (StormCrawler's XPathFilter), kept in
the row's metadata as ``x_<field>``; index-xpath sends them to the index as fields of the same name.

The fields are listed in a JSON file (``parse.xpath.file``, looked up in the conf dir, shipped: extractors.json)::

    {"price":  ["//span[@class='price']/text()", "css:.price::text"],
     "author": "css:.byline .name",
     "isbn":   {"expressions": ["//td[@itemprop='isbn']"], "urls": "^https?://books\\\\.example\\\\.com/"}}

A field's expressions are tried in order; the first that yields a non-empty value gives the field all the values
it yields (an element gives its text; whitespace is collapsed). ``css:`` marks a CSS selector (cssselect), which
may end in ``::text`` or ``::attr(name)``. ``urls`` (a regular expression searched in the page's URL) limits a
field to some pages. ``parse.xpath.max.length`` caps the characters a field keeps.
"""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-xpath", {"parse-filter": "nutch2.plugins.parse_xpath.filter:XPathFilter"},
                "fields by XPath or CSS selectors (parse.xpath.file) into the row")
