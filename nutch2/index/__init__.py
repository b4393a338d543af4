"""Indexing back ends: the Solr client."""
