"""The TLS client contexts of protocol-http: built once per process and trust store, not once per connection.

Without a context of its own urllib3 builds one for every new HTTPS connection and loads the system's CA bundle
into it, a few hundred milliseconds of CPU each on a busy machine. Here one context serves every connection of the
HTTP/1.1 client, and one every connection of the HTTP/2 client (a context of its own: httpcore sets its ALPN list
to offer h2, urllib3 sets its own to http/1.1 only). Both verify certificates against the system's CAs
(SSL_CERT_FILE and SSL_CERT_DIR are honoured, as urllib3's defaults honour them), with urllib3's TLS settings.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

from urllib3.util.ssl_ import create_urllib3_context

log = logging.getLogger(__name__)

__all__ = ["client_context"]

_contexts: dict[tuple[str, str | None, str | None], ssl.SSLContext] = {}
_lock = threading.Lock()


def client_context(kind: str) -> ssl.SSLContext:
    """The process's verifying client context for `kind` ("http/1.1" or "h2"), for the trust store the
    environment names now."""
    key = (kind, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = create_urllib3_context()
            context.load_default_certs()
            _contexts[key] = context
        return context
