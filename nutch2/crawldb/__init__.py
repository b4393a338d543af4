"""The crawl db's logic beside the rows: the batch journal, fetch schedules, scoring, table statistics."""
