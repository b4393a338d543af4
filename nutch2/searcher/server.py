"""`nutch2 server`: check the setup, bind the port, run the Searcher under uvicorn until Ctrl-C."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.stores import backend_name, table_name


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or one line saying why not (port taken, address not on this machine)."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"-port {port} is not a TCP port; give 1-65535 (0 picks a free one)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ConfigError(f"-host {host!r} cannot be resolved ({e.strerror}); give an address such as "
                          "127.0.0.1") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise NutchError(f"cannot listen on {host}:{port}: {e.strerror}; pick another -port or stop what "
                         "uses it") from None
    sock.set_inheritable(True)
    return sock


def serve(conf: Configuration, crawl_id: str | None, solr: str | None, host: str, port: int, jobs: bool) -> int:
    try:
        import uvicorn

        from nutch2.searcher.app import create_app
    except ImportError as e:
        raise ConfigError(f"the server needs starlette, jinja2 and uvicorn ({e.name} is missing): "
                          "pip install 'nutch2[server]'") from None
    from nutch2.searcher.jobapi import JobManager
    from nutch2.solr import SolrClient, solr_url

    if backend_name(conf) == "memory":
        raise ConfigError("storage.data.store.class=memory keeps a crawl inside the process that made it, so a "
                          "server cannot read it; crawl into sqlite, hbase or cassandra")
    table_name(conf, crawl_id)  # a bad crawl id is reported before anything starts
    url = solr_url(conf, solr)
    client = SolrClient(url, min(conf.get_float("solr.timeout"), 30.0))
    files = conf.get_str("server.files.dir").strip()
    manager = JobManager(conf, crawl_id, url, Path(files) if files else None) if jobs else None
    app = create_app(conf, crawl_id, client, manager)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"server: crawl {crawl_id or 'webpage'} at http://{shown}:{bound}/ (Solr {url}"
          f"{', job API on' if jobs else ''}); Ctrl-C stops", file=sys.stderr, flush=True)
    if not _is_loopback(host):
        print(f"server: warning: listening on {host}, not loopback: anyone who reaches it can read the crawl"
              + (" and start jobs" if jobs else "") + "; there is no login", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="info", access_log=True, proxy_headers=False,
                            timeout_graceful_shutdown=35)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn stops gracefully on Ctrl-C, then raises it again: that is our exit
        pass
    print("server: stopped", file=sys.stderr, flush=True)
    return 0
