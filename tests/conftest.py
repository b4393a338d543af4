"""Shared fixtures: configurations and stores for every backend the contract suite covers."""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.stores import Capability, crawl_ids, find_store_class, open_store

REPO = Path(__file__).resolve().parent.parent
CONF_DIR = REPO / "conf"

# the one list of backends: every contract test runs on each; stores with a server (postgres, hbase, cassandra)
# join when NUTCH2_TEST_STORES names them (tests/run.sh names every one it started)
STORE_BACKENDS = ["memory", "sqlite"] + [
    b for b in os.environ.get("NUTCH2_TEST_STORES", "").split(",") if b
]
# ... the durable ones (kill -9 tests), those every process reaches, and those on a server (any machine)
DURABLE_STORES = [b for b in STORE_BACKENDS if find_store_class(b).has(Capability.DURABLE)]
SHARED_STORES = [b for b in STORE_BACKENDS if find_store_class(b).has(Capability.SHARED_PROCESSES)]
SERVICE_STORES = [b for b in STORE_BACKENDS if find_store_class(b).has(Capability.SHARED_MACHINES)]
# what a store's server listens on, for tests that point a store at a dead port (a proxy, a down server)
PORT_KEY = {"hbase": "hbase.thrift.port", "cassandra": "storage.cassandra.port", "postgres": "storage.postgres.url"}


def port_props(backend: str, port: int) -> dict[str, object]:
    """The properties that point a service store's client at another port of this machine."""
    if backend == "postgres":
        return {PORT_KEY[backend]: f"postgresql://nutch2@127.0.0.1:{port}/nutch2"}
    return {PORT_KEY[backend]: port}


# A backend is a store, run with the runner the machine takes by default (mapreduce.framework.name=auto: the
# processes runner on 2+ cores with a store worker processes share, else local), or "<store>:<runner>" where a
# test is about one runner. Job tests run on each store with the default, and on sqlite with the local runner too.
JOB_BACKENDS = [*STORE_BACKENDS, "sqlite:local"]


def split_backend(backend: str) -> tuple[str, str]:
    """"sqlite:local" -> ("sqlite", "local"): a store and the runner ("auto" when none is named)."""
    store, _, framework = backend.partition(":")
    return store, framework or "auto"


def runner_of(backend: str) -> str:
    """The runner a backend's jobs run on: the named one, or the one nutch2 takes by default on this machine."""
    from nutch2.mapred.frameworks import framework

    store, runner = split_backend(backend)
    return framework(Configuration(CONF_DIR, {"storage.data.store.class": store, "mapreduce.framework.name": runner}))


def make_conf(tmp_path: Path, backend: str = "sqlite", **props: object) -> Configuration:
    """A configuration with the repo's conf/, data under tmp_path and the given overrides."""
    store, framework = split_backend(backend)
    overrides = {
        "storage.data.store.class": store,
        "mapreduce.framework.name": framework,
        "storage.data.dir": str(tmp_path / "crawl"),
        "http.agent.name": "nutch2-test",
        "fetcher.address.allow": "127.0.1.0/24",  # the test webs' hosts (tests/crawlutil.py defines says why)
    }
    overrides.update({k: str(v) for k, v in props.items()})
    return Configuration(CONF_DIR, overrides)


# A crawl id the tests make: a prefix and a random hex tail ("ck1f2e3d4a", "t0123456789ab").
_TEST_CRAWL = re.compile(r"[a-z_]*[0-9a-f]{6,}")
_SESSION_CRAWLS = pytest.StashKey[dict]()


def _service_crawls() -> dict[str, set[str]]:
    """The crawl ids each service store in NUTCH2_TEST_STORES holds now (those it cannot list or reach: none)."""
    out: dict[str, set[str]] = {}
    for backend in SERVICE_STORES:
        try:
            out[backend] = set(crawl_ids(make_conf(Path(tempfile.gettempdir()), backend)) or ())
        except Exception:  # a server that is down: its tests fail on their own
            continue
    return out


_SESSIONS = Path(tempfile.gettempdir()) / "nutch2-test-sessions"  # a file per pytest session using the services


def _other_sessions() -> list[int]:
    """The pids of other pytest sessions on this machine that use the service stores and still run."""
    out = []
    for f in _SESSIONS.glob("*"):
        pid = int(f.name) if f.name.isdigit() else 0
        if pid and pid != os.getpid():
            try:
                os.kill(pid, 0)
                out.append(pid)
            except ProcessLookupError:
                f.unlink(missing_ok=True)
            except PermissionError:
                out.append(pid)
    return out


# Modules of the whole suite that take minutes, longest first (from the slowest durations tests/run.sh prints, CI of
# 2026-12-07): they run first, so that pytest-xdist's loadscope, which hands out whole modules in collection order,
# does not leave one of them running alone at the end of the run while the other workers are idle.
LONG_MODULES = ("test_bench_smoke.py", "test_spark.py", "test_chromium_auto.py", "test_crawl_pipeline.py",
                "test_crash_safety.py", "test_crawl_continuous.py", "test_searcher_jobs.py", "test_logins.py",
                "test_stop.py", "test_docker.py", "test_plugins_runners.py", "test_runners.py",
                "test_solr_index.py", "test_crash_sitewarc.py", "test_searcher_hung_index.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long modules first (LONG_MODULES), the rest in their order (a stable sort: a module stays together)."""
    rank = {name: i for i, name in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_MODULES)))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the service stores' crawls, so the tests' own can be dropped at the end (below). Not on CI, where the
    servers are the run's own and stop with it, nor in xdist's workers (the controller does it once)."""
    if os.environ.get("CI") or hasattr(session.config, "workerinput") or not SERVICE_STORES:
        return
    session.config.stash[_SESSION_CRAWLS] = _service_crawls()
    _SESSIONS.mkdir(exist_ok=True)
    (_SESSIONS / str(os.getpid())).touch()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the crawls the tests made on the service stores: many tests make a crawl id per case and leave its
    tables, and hundreds of them slow a developer's HBase and Cassandra (every region and memtable is kept)."""
    before = session.config.stash.get(_SESSION_CRAWLS, None)
    if before is None:
        return
    (_SESSIONS / str(os.getpid())).unlink(missing_ok=True)
    if _other_sessions():  # the crawls made meanwhile may be another session's, in the middle of its tests
        return
    for backend, crawls in _service_crawls().items():
        if backend not in before:  # unreachable at the start: what it held then is not known
            continue
        made = sorted(c for c in crawls - before[backend] if _TEST_CRAWL.fullmatch(c))
        conf = make_conf(Path(tempfile.gettempdir()), backend)
        for crawl_id in made:
            try:
                with open_store(conf, crawl_id, create=False) as store:
                    store.drop_schema()
            except Exception:  # a server that went down: its tables stay, as before
                continue


@pytest.fixture(autouse=True)
def _no_stop_left() -> object:
    """A test that asked this process to stop (in-process stop tests) leaves no request for the next one."""
    yield
    from nutch2.mapred import stop

    stop.reset()


@pytest.fixture
def conf(tmp_path: Path) -> Configuration:
    return make_conf(tmp_path)


@pytest.fixture(params=STORE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(backend: str, tmp_path: Path):
    """A fresh, empty store of each backend (unique crawl id so service backends do not collide)."""
    conf = make_conf(tmp_path, backend)
    crawl_id = "t" + uuid.uuid4().hex[:12]
    s = open_store(conf, crawl_id)
    yield s
    s.drop_schema()
    s.close()


SOLR_URL = os.environ.get("NUTCH2_SOLR_URL", "http://127.0.0.1:8983/solr/nutch").rstrip("/")


def require_solr() -> str:
    """The test Solr's URL; fails in CI and skips elsewhere when it does not answer."""
    import requests

    try:
        requests.get(f"{SOLR_URL}/admin/ping", timeout=5).raise_for_status()
    except requests.RequestException:
        if os.environ.get("CI"):
            pytest.fail(f"Solr not answering at {SOLR_URL} in CI (tests/run.sh starts it)")
        pytest.skip(f"Solr not answering at {SOLR_URL}; run: docker/services.sh start solr")
    return SOLR_URL


@pytest.fixture(scope="module")
def solr_up() -> str:
    """The real Solr core (docker/services.sh start solr), as require_solr() finds it."""
    return require_solr()


OPENSEARCH_URL = os.environ.get("NUTCH2_OPENSEARCH_URL", "http://127.0.0.1:9200").rstrip("/")


def require_opensearch() -> str:
    """The test OpenSearch cluster's URL (docker/services.sh start opensearch); fails in CI and skips elsewhere when
    it does not answer (or is not yet yellow)."""
    import requests

    try:
        r = requests.get(f"{OPENSEARCH_URL}/_cluster/health", params={"wait_for_status": "yellow", "timeout": "5s"},
                         timeout=10)
        r.raise_for_status()
        if r.json().get("status") not in ("yellow", "green"):
            raise requests.RequestException(r.text[:80])
    except (requests.RequestException, ValueError):
        if os.environ.get("CI"):
            pytest.fail(f"OpenSearch not answering at {OPENSEARCH_URL} in CI (tests/run.sh starts it)")
        pytest.skip(f"OpenSearch not answering at {OPENSEARCH_URL}; run: docker/services.sh start opensearch")
    return OPENSEARCH_URL


@pytest.fixture(scope="module")
def opensearch_up() -> str:
    """The real OpenSearch cluster (docker/services.sh start opensearch), as require_opensearch() finds it."""
    return require_opensearch()


TIKA_URL = os.environ.get("NUTCH2_TIKA_URL", "http://127.0.0.1:9998").rstrip("/")


def require_tika() -> str:
    """The test Tika server's URL (docker/services.sh start tika); fails in CI and skips elsewhere when it does not
    answer."""
    import requests

    try:
        r = requests.get(f"{TIKA_URL}/version", timeout=5)
        r.raise_for_status()
        if not r.text.startswith("Apache Tika"):
            raise requests.RequestException(r.text[:80])
    except requests.RequestException:
        if os.environ.get("CI"):
            pytest.fail(f"Tika not answering at {TIKA_URL} in CI (tests/run.sh starts it)")
        pytest.skip(f"Tika not answering at {TIKA_URL}; run: docker/services.sh start tika")
    return TIKA_URL


def require_chromium() -> str:
    """Debian's chromium for protocol-chromium (tests/run.sh installs it); fails in CI and skips elsewhere when it is
    not installed."""
    import shutil

    found = shutil.which("chromium")
    if found is None:
        msg = "Debian's chromium is not installed (apt-get install chromium; tests/run.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{msg} in CI")
        pytest.skip(msg)
    return found


@pytest.fixture(scope="module")
def tika_up() -> str:
    """The real Tika server, as require_tika() finds it."""
    return require_tika()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for a browser test's screenshots (its path printed, to look at them)."""
    path = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots: {path}")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    """Debian's chromium through its chromedriver (selenium), one per test module."""
    from tests.searchapp import chrome

    driver = chrome(tmp_path_factory.mktemp("chromium-profile"))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
