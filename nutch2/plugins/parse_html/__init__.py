"""parse-html: HTML and XHTML (lxml): title, visible text, outlinks with anchors, robots meta directives, meta
refresh, meta tags; the DOM is handed to the parse filters."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-html", {"parser": "nutch2.plugins.parse_html.parser:HtmlParser"}, "HTML pages")
