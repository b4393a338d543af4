"""The row metadata keys parse-boilerplate writes (its indexing filter reads them; the fields keep the names)."""

MAIN_CONTENT = "main_content"
MAIN_TITLE = "main_title"
MAIN_AUTHOR = "main_author"
MAIN_DATE = "main_date"  # YYYY-MM-DD
KEYS = (MAIN_CONTENT, MAIN_TITLE, MAIN_AUTHOR, MAIN_DATE)
