"""URL handling: row keys (reversed URLs), hosts and domains, the filter and normalizer chains."""
