"""The Searcher: the other half of Nutch, a web app over one crawl.

Search through Solr (hits, snippets, paging, a host facet), the cached copy of a page from the store, a page's
row (the old explain/anchors pages), a crawl dashboard (readdb stats and batches), a JSON API and, when asked
for, Nutch 2's job API; /metrics for Prometheus. `nutch2 server` starts it (nutch2.searcher.server.serve).
"""

from nutch2.errors import ConfigError


def server_extra_missing(e: ImportError) -> ConfigError:
    """The one-line error for a server started without its extra (starlette, jinja2 and markupsafe, uvicorn)."""
    return ConfigError(f"the server needs starlette, jinja2 and uvicorn ({e.name} is missing): "
                       "pip install 'nutch2[server]'")
