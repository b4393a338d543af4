"""The metadata keys nutch2 keeps for itself in a row's metadata map, in one place (Nutch 2 spreads its own over
the classes that use them). A user's or a plugin's metadata uses other keys: these begin and end with "_". The
marks a row carries in its markers map are nutch2/marks.py."""

from __future__ import annotations

CASH_KEY = "_csh_"  # scoring-opic: the row's OPIC cash, as Nutch 2 keeps it
CLAIM = "_ftclaim_"  # fetch: "<batch>/<run>/<n>" of the fetch that may have requested the URL (fetch/fetchclaim.py)
UPDATE_RUN = "_updrun_"  # updatedb: the run that last wrote this row's links (jobs/updatedb.py)
STAGE_KEY = "_updstg_"  # updatedb: "<run id>\n<JSON of the row's new values>" until the commit step
TRUNCATED_KEY = "_trunc_"  # fetch: the body was cut; why, as WARC-Truncated says it: length, time, disconnect
# (b"y" in rows written before the reason was kept)
DEFER_KEY = "_defer_"  # fetch: robots.txt gave no rules; when (ms) the URL is due again (updatedb applies it)
NOINDEX_KEY = "_noidx_"  # parse: the page's meta robots forbid indexing (the indexer deletes it)
IP_KEY = "_ip_"  # warcimport: the server's IP address (Nutch's content metadata key), from WARC-IP-Address
LASTMOD_KEY = "_stmlm_"  # sitemap: the sitemap lastmod (ms) that last made this row due
# warc: the last response record `nutch2 warc` wrote for the row's content, as JSON (payload digest, record id,
# target URI, date, folder, file; nutch2/archive/warc.py Capture), written once that file is complete
CAPTURE_KEY = "_warc_"

RESERVED_METADATA = (CASH_KEY, CLAIM, UPDATE_RUN, STAGE_KEY, TRUNCATED_KEY, DEFER_KEY, NOINDEX_KEY, IP_KEY,
                     LASTMOD_KEY, CAPTURE_KEY)
