"""Parsing: the page parser shared by parse and fetch, parsers by content type, signatures."""
