"""Shipped configuration: nutch-default.toml, regex-urlfilter.txt, the Solr configset (package data)."""
