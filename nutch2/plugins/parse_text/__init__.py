"""parse-text: text/plain as it is (its encoding detected; no title, no outlinks)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-text", {"parser": "nutch2.plugins.parse_text.parser:TextParser"}, "plain text")
