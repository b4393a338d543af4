"""Archive formats: WARC files written and read."""
