"""`nutch2 server`: check the setup (login, TLS, limits), bind the port, run the Searcher under uvicorn until Ctrl-C."""

from __future__ import annotations

import asyncio
import getpass
import ipaddress
import logging
import shlex
import signal
import socket
import ssl
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nutch2 import logs
from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError, StoreError
from nutch2.index.opensearch import OpenSearchClient, opensearch_url
from nutch2.index.solr import SolrClient, solr_url
from nutch2.searcher import server_extra_missing
from nutch2.searcher.access import AccessPolicy, guarded_protocol
from nutch2.searcher.auth import Credentials, add_user, read_token, read_users
from nutch2.searcher.search import UNAVAILABLE, BoundedIndex, SearchBackend, SolrBackend
from nutch2.searcher.search_opensearch import OpenSearchBackend
from nutch2.stores import Capability, crawl_id_of, crawl_ids, store_class, table_name

if TYPE_CHECKING:
    import uvicorn

    from nutch2.searcher.jobapi import JobManager

log = logging.getLogger(__name__)
# requests that may wait on the index at once (of the 40 worker threads): a hung index leaves the others to pages
# that ask no index
INDEX_WAITING = 16
JOB_STOP_WAIT = 30.0  # seconds a stopping server waits for its job to end (then it ends with the server)


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
    family, _, proto, _, addr = infos[0]
    # the protocol number matters: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say IPPROTO_TCP, and
    # with Nagle on every response written in two parts (headers, body) waits ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, proto or socket.IPPROTO_TCP)
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


@dataclass
class ServerOptions:
    """How `nutch2 server` listens and whom it lets in (its command-line options)."""

    host: str = "127.0.0.1"
    port: int = 8081
    jobs: bool = False
    token_file: str | None = None
    users_file: str | None = None
    insecure: bool = False
    ssl_cert: str | None = None
    ssl_key: str | None = None


def credentials(conf: Configuration, opts: ServerOptions) -> Credentials:
    """The token and users the server checks (-tokenFile / -users, else their properties)."""
    token_file = opts.token_file or conf.get_str("searcher.auth.token.file")
    users_file = opts.users_file or conf.get_str("searcher.auth.users.file")
    return Credentials(read_token(Path(token_file)) if token_file else None,
                       read_users(Path(users_file)) if users_file else {})


def access_policy(conf: Configuration, opts: ServerOptions, creds: Credentials) -> AccessPolicy:
    """Loopback names, the -host address and searcher.allowed.hosts; the request limits of the configuration."""
    extra = [h for h in conf.get_str("searcher.allowed.hosts").split(",") if h.strip()]
    limits = {"body_max": conf.get_int("searcher.body.max"), "body_timeout": conf.get_float("searcher.body.timeout"),
              "json_depth": conf.get_int("searcher.json.depth.max"), "form_max": conf.get_int("searcher.form.max")}
    for name, value in limits.items():
        if value <= 0:
            raise ConfigError(f"searcher.{name.replace('_', '.')} must be > 0, not {value}")
    return AccessPolicy.build([opts.host, *extra], creds, **limits)


def _ssl_check(opts: ServerOptions) -> None:
    if bool(opts.ssl_cert) != bool(opts.ssl_key):
        raise ConfigError("give both -sslCert FILE and -sslKey FILE (a PEM certificate chain and its private key)")
    if not opts.ssl_cert:
        return
    for flag, name in (("-sslCert", opts.ssl_cert), ("-sslKey", opts.ssl_key)):
        path = Path(name or "")
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "does not exist"
            raise ConfigError(f"{flag} {name} {what}; give -sslCert FILE and -sslKey FILE as PEM files (a certificate "
                              "chain and its private key)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(opts.ssl_cert, opts.ssl_key)
    except FileNotFoundError as e:  # gone since the check
        raise ConfigError(f"{e.filename or opts.ssl_cert} does not exist; give -sslCert and -sslKey as PEM "
                          "files") from None
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"-sslCert {opts.ssl_cert} / -sslKey {opts.ssl_key} cannot be used "
                          f"({getattr(e, 'reason', None) or e}); give a PEM certificate chain and its key") from None


def index_backend(conf: Configuration, solr: str | None, opensearch: str | None, timeout: float) -> SearchBackend:
    """The index the server searches: the OpenSearch index of -opensearch, else the Solr core of -solr (or
    solr.server.url); each request may take `timeout` seconds at most (and solr.timeout / opensearch.timeout)."""
    if opensearch:
        url = opensearch_url(conf, opensearch)
        return OpenSearchBackend(OpenSearchClient(url, min(conf.get_float("opensearch.timeout"), timeout)))
    return SolrBackend(SolrClient(solr_url(conf, solr), min(conf.get_float("solr.timeout"), timeout)))


def startup_warnings(conf: Configuration, crawl_id: str | None, index: SearchBackend) -> list[str]:
    """What will not work until the operator acts, each in one line: the index (Solr, OpenSearch) does not answer,
    the store holds no table for the crawl (the server starts either way: its pages say so until the index answers
    or the crawl exists)."""
    found = []
    try:
        index.ping()
    except UNAVAILABLE as e:
        found.append(f"server: warning: {e}; searches fail until it answers")
    cid = crawl_id_of(conf, crawl_id)
    try:
        held = crawl_ids(conf)
    except StoreError as e:
        found.append(f"server: warning: {e}; pages of the crawl fail until the store answers")
        return found
    if held is not None and cid not in held:
        table = table_name(conf, crawl_id)
        names = [i or f"{table.removeprefix(f'{cid}_')} (no -crawlId)" for i in held]
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        others = f"it holds {shown}: serve one of them, or" if held else "it holds no crawl yet:"
        inject = shlex.join(["nutch2", "inject", "SEEDS", *(["-crawlId", cid] if cid else [])])
        what = f"crawl {cid} (table {table})" if cid else f"table {table} (no -crawlId)"
        found.append(f"server: warning: the {store_class(conf).name} store holds no {what}; {others} run "
                     f"`{inject}` first")
    return found


def serve(conf: Configuration, crawl_id: str | None, solr: str | None, opts: ServerOptions,
          opensearch: str | None = None) -> int:
    """Serve the crawl over the Solr core of `solr` or, given, the OpenSearch index of `opensearch`."""
    try:
        import uvicorn

        from nutch2.searcher.app import create_app
    except ImportError as e:
        raise server_extra_missing(e) from None
    from nutch2.searcher.jobapi import JobManager

    if opts.jobs:
        try:
            import python_multipart  # noqa: F401 - the dashboard's crawl forms are parsed by it (Starlette's parser)
        except ImportError:
            raise ConfigError("-jobs needs python-multipart for the dashboard's crawl forms: "
                              "pip install 'nutch2[server]'") from None

    if not store_class(conf).has(Capability.SHARED_PROCESSES):
        raise ConfigError(f"storage.data.store.class={store_class(conf).name} keeps a crawl inside the process that "
                          "made it, so a server cannot read it; crawl into sqlite, postgres, hbase or cassandra")
    table_name(conf, crawl_id)  # a bad crawl id is reported before anything starts
    creds = credentials(conf, opts)
    if not _is_loopback(opts.host) and not creds.required and not opts.insecure:
        raise ConfigError(f"-host {opts.host} is reachable from other machines, and the server has no login: give "
                          "-tokenFile FILE or -users FILE (and -sslCert/-sslKey), or -insecure to serve it without")
    _ssl_check(opts)
    policy = access_policy(conf, opts, creds)
    header_timeout = conf.get_float("searcher.header.timeout")
    max_connections = conf.get_int("searcher.max.connections")
    per_client = conf.get_int("searcher.max.connections.per.client")
    if header_timeout <= 0 or max_connections <= 0 or per_client < 0:
        raise ConfigError("searcher.header.timeout and searcher.max.connections must be > 0, "
                          "searcher.max.connections.per.client >= 0")
    index = BoundedIndex(index_backend(conf, solr, opensearch, 30.0), INDEX_WAITING)
    warnings = startup_warnings(conf, crawl_id, index_backend(conf, solr, opensearch, 5.0))
    files = conf.get_str("server.files.dir").strip()
    manager = None
    if opts.jobs:
        manager = JobManager(conf, crawl_id, None if opensearch else solr_url(conf, solr),
                             Path(files) if files else None, opensearch_url(conf, opensearch) if opensearch else None)
    app = create_app(conf, crawl_id, index, manager, policy=policy)
    sock = bind(opts.host, opts.port)
    bound = sock.getsockname()[1]
    shown = f"[{opts.host}]" if ":" in opts.host else opts.host
    scheme = "https" if opts.ssl_cert else "http"
    login = ", ".join([*(["token"] if creds.token else []),
                       *([logs.counted(len(creds.users), "user")] if creds.users else [])])
    print(f"server: crawl {crawl_id or 'webpage'} at {scheme}://{shown}:{bound}/ ({index.name} {index.url}"
          f"{', job API on' if opts.jobs else ''}, login: {login or 'none'}); Ctrl-C stops",
          file=sys.stderr, flush=True)
    for line in warnings:
        log.warning(line)
    if not _is_loopback(opts.host):
        if not creds.required:
            print(f"server: warning: -insecure: anyone who reaches {opts.host} can read the crawl"
                  + (" and start jobs" if opts.jobs else ""), file=sys.stderr, flush=True)
        elif not opts.ssl_cert:
            print("server: warning: no -sslCert: passwords and tokens cross the network in clear text",
                  file=sys.stderr, flush=True)
    if opts.host in ("0.0.0.0", "::") and not policy.any_host:
        print("server: listening on every address; requests must name localhost or a host in "
              "searcher.allowed.hosts", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="info", access_log=True, proxy_headers=False,
                            timeout_graceful_shutdown=35, http=guarded_protocol(header_timeout, per_client),
                            limit_concurrency=max_connections, ssl_certfile=opts.ssl_cert, ssl_keyfile=opts.ssl_key,
                            server_header=False, ws="none")  # no route is a WebSocket: an Upgrade is a plain GET
    # uvicorn stops gracefully on SIGINT and SIGTERM (its lifespan stops the running job), then raises the signal
    # again: SIGINT as KeyboardInterrupt, and SIGTERM through this handler, so both end here with exit 0
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        _server(config, manager).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("server: stopped", file=sys.stderr, flush=True)
    return 0


def _server(config: uvicorn.Config, jobs: JobManager | None) -> uvicorn.Server:
    """uvicorn's server that, told to stop, stops the running job first, while it still answers (_stop_jobs)."""
    import uvicorn

    class JobsFirst(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await _stop_jobs(self, jobs)
            await super().shutdown(sockets)

    return JobsFirst(config)


async def _stop_jobs(server: uvicorn.Server, jobs: JobManager | None) -> None:
    """Stop the running job and wait for it to end, then answer a little longer (a job page's progress frame
    reloads within it), so that open job pages and the API's clients see the job end, stopped with the server,
    rather than a server that stops answering under them: a frame whose reload fails shows the browser's error
    page and reloads no more (no script retries). A second Ctrl-C stops at once."""
    from nutch2.searcher.crawlforms import REFRESH_SECONDS

    running = jobs.stop_with_server() if jobs is not None else []
    threads = [j.thread for j in running if j.thread is not None]
    deadline = time.monotonic() + JOB_STOP_WAIT
    while any(t.is_alive() for t in threads) and not server.force_exit and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    if running and not any(t.is_alive() for t in threads):
        deadline = time.monotonic() + REFRESH_SECONDS + 1
        while not server.force_exit and time.monotonic() < deadline:
            await asyncio.sleep(0.1)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def add_user_interactively(path: str, user: str) -> int:
    """`nutch2 server -users FILE -addUser NAME`: the password from the terminal (twice) or stdin's first line."""
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {user}: ")
        if getpass.getpass("again: ") != password:
            raise ConfigError("the two passwords differ; nothing was written")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    add_user(Path(path), user, password)
    print(f"server: user {user} written to {path} (scrypt hash)", file=sys.stderr)
    return 0
