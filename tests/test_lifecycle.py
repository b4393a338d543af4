"""The batch life cycle through the real CLI: steps that would throw work away are refused with one line (and
`-force` loses no page), a killed `generate -batchId` reruns to the same batch, generate says why it selected
nothing, and `crawl -solr` checks Solr first and indexes every updated batch after an outage."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from nutch2.crawldb.journal import FETCHING, GENERATING, INDEXED, UPDATED, UPDATING, Journal
from nutch2.marks import Mark
from nutch2.status import CrawlStatus, ParseMajor
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.conftest import require_solr
from tests.crawlutil import conf_for, defines, rows, seed_file
from tests.helpers import KILLED, build_batch, nutch2, same_rows, table
from tests.proxy import Proxy
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = [x for x in p.stderr.splitlines() if "error:" in x]
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=6, traps=False) as w:
        yield w


def _fetched_batch(tmp: Path, web: TestWeb, backend: str = "sqlite") -> tuple[list[str], str, str]:
    d = defines(tmp, backend)
    crawl_id = f"lc{uuid.uuid4().hex[:8]}"
    seeds = seed_file(tmp, *[web.page_url(h, i) for h in range(3) for i in range(1, 6)])
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    gen = nutch2("generate", "-crawlId", crawl_id, *d)
    assert gen.returncode == 0, gen.stderr
    batch = gen.stdout.strip()
    assert nutch2("fetch", batch, "-crawlId", crawl_id, *d).returncode == 0
    return d, crawl_id, batch


@pytest.mark.parametrize("backend", ["sqlite:local", "sqlite"])
def test_fetching_a_fetched_batch_again_is_refused_and_force_loses_no_page(web: TestWeb, tmp_path: Path,
                                                                          backend: str) -> None:
    d, crawl_id, batch = _fetched_batch(tmp_path, web, backend)
    again = nutch2("fetch", batch, "-crawlId", crawl_id, *d)
    assert again.returncode == 1
    line = one_line(again)  # fetched to its end: -resume would do nothing; what goes on is parse
    assert f"batch {batch} is already fetched: nothing is left to fetch in it" in line and "-resume" not in line
    assert f"go on with `nutch2 parse {batch} -crawlId {crawl_id}`" in line and "-force" in line  # a command to copy
    # so is a fetch of every batch, which would fetch this one again; with -resume it finds nothing left to fetch
    web.reset_log()
    every = nutch2("fetch", "-all", "-crawlId", crawl_id, *d)
    assert every.returncode == 1
    line = one_line(every)
    assert f"batch {batch} was fetched" in line and "-force" in line
    assert f"`nutch2 fetch -all -resume -crawlId {crawl_id}`" in line
    resumed = nutch2("fetch", "-all", "-resume", "-crawlId", crawl_id, *d)
    assert resumed.returncode == 0, resumed.stderr
    assert not web.requests()
    # -force: every page again; the test web answers the conditional GETs with 304, and the parse of what a 304
    # confirms is not lost (Nutch 2 left such rows unparseable)
    web.reset_log()
    forced = nutch2("fetch", batch, "-force", "-crawlId", crawl_id, *d)
    assert forced.returncode == 0, forced.stderr
    assert len(web.requests()) >= 15
    conf = conf_for(tmp_path, backend)
    assert {p.status for p in rows(conf, crawl_id).values()} == {CrawlStatus.NOTMODIFIED}
    assert nutch2("parse", batch, "-crawlId", crawl_id, *d).returncode == 0
    for page in rows(conf, crawl_id).values():
        assert Mark.PARSE.check(page) == batch and page.parse_status.major_code == ParseMajor.SUCCESS, page.key
        assert page.title and page.text, page.key
    line = one_line(nutch2("fetch", batch, "-crawlId", crawl_id, *d))
    assert f"batch {batch} is already fetched and parsed" in line
    assert f"`nutch2 updatedb {batch} -crawlId {crawl_id}`" in line
    assert nutch2("updatedb", batch, "-crawlId", crawl_id, *d).returncode == 0


@pytest.mark.parametrize("point", ["store.flush=1", "store.flush=3"])  # a first claim only; some pages written
def test_a_partly_fetched_batch_is_refused_without_resume(web: TestWeb, tmp_path: Path, point: str) -> None:
    d = defines(tmp_path, "sqlite", **{"fetcher.write.batch.size": 2, "storage.write.batch.size": 2})
    crawl_id = "pf"
    seeds = seed_file(tmp_path, *[web.page_url(h, i) for h in range(3) for i in range(1, 6)])
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    batch = nutch2("generate", "-crawlId", crawl_id, *d).stdout.strip()
    killed = nutch2("fetch", batch, "-crawlId", crawl_id, *d, failpoints=point)
    assert killed.returncode == KILLED
    with open_store(conf_for(tmp_path, "sqlite"), crawl_id, create=False) as store:
        assert Journal(store).batch(batch).state == FETCHING  # requests may have been sent
    again = nutch2("fetch", batch, "-crawlId", crawl_id, *d)
    assert again.returncode == 1 and "was partly fetched" in one_line(again)
    assert nutch2("fetch", batch, "-resume", "-crawlId", crawl_id, *d).returncode == 0
    conf = conf_for(tmp_path, "sqlite")
    assert all(Mark.FETCH.check(p) == batch for p in rows(conf, crawl_id).values())


def test_updatedb_of_a_batch_whose_fetch_was_stopped_is_refused_until_it_is_resumed(web: TestWeb,
                                                                                    tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM in a fetch (exit 130, `fetch B -resume` goes on), then updatedb: refused in one line, also
    after a parse of what was fetched (the batch stays unfinished); `crawl` resumes the fetch itself; -force
    updates what a killed fetch fetched."""
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 1.0})
    crawl_id = f"st{uuid.uuid4().hex[:8]}"
    seeds = seed_file(tmp_path, *[web.page_url(h, i) for h in range(3) for i in range(1, 6)])
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    batch = nutch2("generate", "-crawlId", crawl_id, *d).stdout.strip()
    web.reset_log()
    fetch = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, "-crawlId", crawl_id, *d],
                             cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len([r for r in web.requests() if r.path != "/robots.txt"]) < 3 and fetch.poll() is None:
        assert time.monotonic() < deadline, "the fetch sent no request"
        time.sleep(0.02)
    fetch.send_signal(signal.SIGTERM)
    err = fetch.communicate(timeout=60)[1]
    assert fetch.returncode == 130 and f"run `nutch2 fetch {batch} " in err and "-resume` to go on" in err, err
    summary = next(line for line in err.splitlines() if "fetch: stopped after" in line)  # what it did until then
    assert "fetched=" in summary or "status_FETCHED=" in summary, err
    conf = conf_for(tmp_path, "sqlite")
    for step in ("updatedb", "parse"):  # a parse of what was fetched does not finish the batch
        refused = nutch2("updatedb", batch, "-crawlId", crawl_id, *d)
        assert refused.returncode == 1
        assert one_line(refused) == (
            f"nutch2 updatedb: error: the fetch of batch {batch} did not finish (it was stopped or killed); "
            f"updating it now would leave the URLs it did not fetch for a later batch: run `nutch2 fetch {batch} "
            f"-resume -crawlId {crawl_id}` (then `nutch2 parse {batch} -crawlId {crawl_id}`) first, or give -force to "
            "update what was fetched")
        if step == "parse":  # allowed, as Nutch's, and said
            parsed = nutch2("parse", batch, "-crawlId", crawl_id, *d)
            assert parsed.returncode == 0, parsed.stderr
            assert (f"parse: the fetch of batch {batch} did not finish; parsing what it fetched. Finish it with "
                    f"`nutch2 fetch {batch} -resume -crawlId {crawl_id}`, then `nutch2 parse {batch} -resume "
                    f"-crawlId {crawl_id}` parses only the rest") in parsed.stderr, parsed.stderr
        with open_store(conf, crawl_id, create=False) as store:
            assert Journal(store).batch(batch).state == FETCHING
    assert all(Mark.GENERATE.check(p) == batch for p in rows(conf, crawl_id).values())  # nothing was updated
    rerun = nutch2("crawl", seeds, "-rounds", 1, "-topN", 1, "-crawlId", crawl_id, *d)
    assert rerun.returncode == 0, rerun.stderr
    assert f"finishing batch {batch}" in rerun.stderr
    with open_store(conf, crawl_id, create=False) as store:
        assert Journal(store).batch(batch).state == UPDATED
    seeded = {reverse_url(u) for u in seeds.read_text().split()}
    assert {p.status for k, p in rows(conf, crawl_id).items() if k in seeded} == {CrawlStatus.FETCHED}
    # killed, not stopped: the same; -force updates what was fetched
    killed_id = f"sk{uuid.uuid4().hex[:8]}"
    assert nutch2("inject", seeds, "-crawlId", killed_id, *d).returncode == 0
    batch = nutch2("generate", "-crawlId", killed_id, *d).stdout.strip()
    assert nutch2("fetch", batch, "-crawlId", killed_id, *d, failpoints="store.flush=3").returncode == KILLED
    assert "did not finish" in one_line(nutch2("updatedb", batch, "-crawlId", killed_id, *d))
    forced = nutch2("updatedb", batch, "-force", "-crawlId", killed_id, *d)
    assert forced.returncode == 0, forced.stderr
    with open_store(conf, killed_id, create=False) as store:
        assert Journal(store).batch(batch).state == UPDATED


def test_updatedb_of_an_unparsed_batch_is_refused_and_force_keeps_pages_parseable(web: TestWeb,
                                                                                 tmp_path: Path) -> None:
    d, crawl_id, batch = _fetched_batch(tmp_path, web)
    refused = nutch2("updatedb", batch, "-crawlId", crawl_id, *d)
    assert refused.returncode == 1
    line = one_line(refused)
    assert f"batch {batch} was fetched but not parsed" in line and f"nutch2 parse {batch}" in line
    assert "-force" in line
    conf = conf_for(tmp_path, "sqlite")
    assert all(Mark.GENERATE.check(p) == batch for p in rows(conf, crawl_id).values())  # untouched
    forced = nutch2("updatedb", batch, "-force", "-crawlId", crawl_id, *d)
    assert forced.returncode == 0, forced.stderr
    fetched = [p for p in rows(conf, crawl_id).values() if p.status == CrawlStatus.FETCHED]
    assert fetched and not any(Mark.GENERATE.check(p) for p in fetched)
    # the pages are still parseable: their content is kept and parse -reparse parses them
    assert nutch2("parse", "-reparse", "-crawlId", crawl_id, *d).returncode == 0
    for page in rows(conf, crawl_id).values():
        if page.status == CrawlStatus.FETCHED:
            assert page.parse_status.major_code == ParseMajor.SUCCESS and page.text, page.key


def test_an_updatedb_of_every_batch_is_journalled_apart_from_the_batches(tmp_path: Path) -> None:
    props = {"storage.write.batch.size": 40}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    build_batch(conf, "ref", 120)
    assert nutch2("updatedb", "-all", "-crawlId", "ref", *d).returncode == 0
    build_batch(conf, "ua", 120)
    killed = nutch2("updatedb", "-all", "-crawlId", "ua", *d, failpoints="updatedb.commit=50")
    # the point is in a task: the command is killed, or (processes runner) the worker that ran the task
    assert killed.returncode == KILLED or "a worker process died" in killed.stderr, killed.stderr
    with open_store(conf, "ua", create=False) as store:
        journal = Journal(store)
        assert journal.updating() == [None] and journal.batches() == []  # no batch named "-all"
        assert "batch/-all" not in store.states()
    gen = nutch2("generate", "-crawlId", "ua", *d)
    assert gen.returncode == 1 and "updatedb of batch -all was interrupted" in one_line(gen)
    assert nutch2("updatedb", "-all", "-crawlId", "ua", *d).returncode == 0
    same_rows(table(conf, "ua"), table(conf, "ref"))
    with open_store(conf, "ua", create=False) as store:
        journal_names = {n for n in store.states() if not n.startswith("lease/")}  # leases (released) live there too
        assert Journal(store).updating() == [] and journal_names == {"batch/B"}  # B is updated
        # a table written before this journal kept that entry as a batch named "-all": still read, and finished
        store.put_state("batch/-all", json.dumps({"state": UPDATING, "run": "r1"}))
        journal = Journal(store)
        assert journal.updating() == [None] and [r.batch_id for r in journal.batches()] == ["B"]
        journal.forget_all_update()
        assert journal.updating() == [] and {n for n in store.states() if not n.startswith("lease/")} == {"batch/B"}


def test_a_killed_generate_with_a_batch_id_reruns_to_the_same_batch(tmp_path: Path) -> None:
    props = {"storage.write.batch.size": 50}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite", **props)
    seeds = seed_file(tmp_path, *[f"http://h{i % 7}.test/p{i}" for i in range(600)])
    for cid in ("ref", "gk"):
        assert nutch2("inject", seeds, "-crawlId", cid, *d).returncode == 0
    assert nutch2("generate", "-topN", 400, "-batchId", "G", "-crawlId", "ref", *d).stdout.strip() == "G"
    expected = {k for k, p in table(conf, "ref").items() if Mark.GENERATE.check(p) == "G"}
    killed = nutch2("generate", "-topN", 400, "-batchId", "G", "-crawlId", "gk", *d, failpoints="store.flush=3")
    assert killed.returncode == KILLED
    with open_store(conf, "gk", create=False) as store:
        assert Journal(store).batch("G").state == GENERATING
    fetch = nutch2("fetch", "G", "-crawlId", "gk", *d)  # the partial batch is not fetched
    assert fetch.returncode == 1 and "its generate was interrupted" in one_line(fetch)
    rerun = nutch2("generate", "-topN", 400, "-batchId", "G", "-crawlId", "gk", *d)
    assert rerun.returncode == 0 and rerun.stdout.strip() == "G", rerun.stderr
    assert {k for k, p in table(conf, "gk").items() if Mark.GENERATE.check(p) == "G"} == expected


def test_a_step_asked_before_the_one_it_needs_fails_naming_it(web: TestWeb, tmp_path: Path) -> None:
    """parse of a batch generated but not fetched did not do its job: exit 1 and the command to run first (a batch
    whose fetch ran and fetched nothing stays a normal no-op: test_crash_bad_input)."""
    d = defines(tmp_path, "sqlite")
    assert nutch2("inject", seed_file(tmp_path, web.seed_url), "-crawlId", "early", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "early", *d).stdout.strip()
    parse = nutch2("parse", batch, "-crawlId", "early", *d)
    assert parse.returncode == 1, parse.stderr
    assert f"parse: error: batch {batch} is generated, not fetched: run `nutch2 fetch {batch}` first" in parse.stderr
    assert nutch2("fetch", batch, "-crawlId", "early", *d).returncode == 0  # nothing was recorded by the refusal
    assert nutch2("parse", batch, "-crawlId", "early", *d).returncode == 0


def test_generate_with_nothing_due_says_when_the_next_row_is(web: TestWeb, tmp_path: Path) -> None:
    """A crawl whose rows are all fetched: generate says when the next comes due (the due index knows), not 'or
    the table has no rows (inject seeds first)', which a waiting continuous crawl logged every round."""
    d = defines(tmp_path, "sqlite", **{"db.update.additions.allowed": "false"})
    assert nutch2("inject", seed_file(tmp_path, web.seed_url), "-crawlId", "when", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "when", *d).stdout.strip()
    for step in ("fetch", "parse", "updatedb"):
        assert nutch2(step, batch, "-crawlId", "when", *d).returncode == 0
    again = nutch2("generate", "-crawlId", "when", *d)
    assert again.returncode == 1
    due = time.strftime("%Y-%m-%d", time.localtime(time.time() + 30 * 86400))
    assert f"0 URLs selected for fetching: no row is due before {due} " in again.stderr, again.stderr
    assert "inject seeds first" not in again.stderr


def test_generate_with_nothing_selected_says_why(web: TestWeb, tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    seeds = seed_file(tmp_path, web.seed_url)
    assert nutch2("inject", seeds, "-crawlId", "why", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "why", *d).stdout.strip()
    again = nutch2("generate", "-crawlId", "why", *d)
    assert again.returncode == 1 and again.stdout == ""
    assert f"1 is in a batch not yet updated (batch {batch})" in again.stderr, again.stderr


def test_counts_in_lines_are_singular_for_one(web: TestWeb, tmp_path: Path) -> None:
    """`1 URL`, not `1 URLs`; `an updatedb mark`, not `a updatedb mark`."""
    d = defines(tmp_path, "sqlite")
    assert nutch2("inject", seed_file(tmp_path, web.seed_url), "-crawlId", "one", *d).returncode == 0
    gen = nutch2("generate", "-crawlId", "one", *d)
    batch = gen.stdout.strip()
    assert f"generate: batch id {batch}: 1 URL\n" in gen.stderr, gen.stderr
    solr = require_solr()
    index = nutch2("index", batch, "-solr", solr, "-crawlId", "one", *d)  # generated, not updated: asked too early
    assert index.returncode == 1, index.stderr
    assert f"batch {batch} is generated, not updated: run `nutch2 updatedb {batch}` first" in index.stderr


# ---------------------------------------------------------------------------------------------------- Solr outages
@pytest.mark.integration
@pytest.mark.timeout(600)
def test_crawl_solr_checks_solr_first_and_a_rerun_indexes_every_round(web: TestWeb, tmp_path: Path) -> None:
    solr = require_solr()
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.02})
    conf = conf_for(tmp_path, "sqlite")
    crawl_id = f"so{uuid.uuid4().hex[:8]}"
    seeds = seed_file(tmp_path, web.seed_url)
    args = ("crawl", seeds, "-rounds", 3, "-topN", 8, "-crawlId", crawl_id, *d)
    dead = nutch2(*args[:-len(d)], "-solr", "http://127.0.0.1:9/solr/nutch", *d)
    assert dead.returncode == 1 and "Solr" in one_line(dead)
    assert not (tmp_path / "crawl" / f"{crawl_id}_webpage.sqlite").exists()  # nothing was done before the check

    proxy = Proxy(("127.0.0.1", int(solr.split(":")[2].split("/")[0])))
    via = f"http://127.0.0.1:{proxy.port}/{solr.split('/', 3)[3]}"
    cut = threading.Event()

    def cut_after_round_one() -> None:  # Solr goes away once round 1 is indexed, in the middle of the crawl
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not cut.is_set():
            try:
                with open_store(conf, crawl_id, create=False) as store:
                    if any(r.state == INDEXED for r in Journal(store).batches()):
                        proxy.cut()
                        cut.set()
                        return
            except Exception:  # noqa: BLE001 - not created yet
                pass
            time.sleep(0.05)

    watcher = threading.Thread(target=cut_after_round_one, daemon=True)
    watcher.start()
    failed = nutch2(*args[:-len(d)], "-solr", via, *d)
    watcher.join()
    assert cut.is_set() and failed.returncode == 1, failed.stderr
    assert "Solr" in one_line(failed)
    proxy.restore()
    rerun = nutch2(*args[:-len(d)], "-solr", via, *d)
    assert rerun.returncode == 0, rerun.stderr
    proxy.close()
    with open_store(conf, crawl_id, create=False) as store:
        batches = Journal(store).batches()
    assert len(batches) == 3 and {r.state for r in batches} == {INDEXED}
    ids = {f"{crawl_id}!{p.key}" for p in rows(conf, crawl_id).values() if Mark.INDEX.check(p)}  # crawl!key
    assert len(ids) > 8  # pages of more than one round
    found = requests.get(f"{solr}/select", params={"q": "*:*", "fl": "id", "rows": 10000,
                                                   "fq": f"batchId:({' OR '.join(r.batch_id for r in batches)})"},
                         timeout=30).json()["response"]["docs"]
    assert ids <= {doc["id"] for doc in found}


def test_steps_of_an_interrupted_crawl_are_finished_by_the_same_command(web: TestWeb, tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.02})
    conf = conf_for(tmp_path, "sqlite")
    seeds = seed_file(tmp_path, web.seed_url)
    assert nutch2("crawl", seeds, "-rounds", 3, "-crawlId", "ref", *d).returncode == 0
    # round 1 by crawl, round 2 generated and fetched by hand, then `crawl -rounds 1` parses and updates round 2
    # (without fetching it again) and does round 3
    assert nutch2("crawl", seeds, "-rounds", 1, "-crawlId", "hand", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "hand", *d).stdout.strip()
    web.reset_log()
    assert nutch2("fetch", batch, "-crawlId", "hand", *d).returncode == 0
    fetched = {(r.host, r.path) for r in web.requests() if r.path != "/robots.txt"}
    web.reset_log()
    rerun = nutch2("crawl", seeds, "-rounds", 1, "-crawlId", "hand", *d)
    assert rerun.returncode == 0, rerun.stderr
    assert f"finishing batch {batch}" in rerun.stderr
    assert not fetched & {(r.host, r.path) for r in web.requests()}  # round 2 was not fetched again
    names = {}
    for cid in ("ref", "hand"):
        with open_store(conf, cid, create=False) as store:
            names[cid] = {r.batch_id: f"r{i}" for i, r in enumerate(Journal(store).batches())}
    same_rows(table(conf, "hand"), table(conf, "ref"), names["hand"], names["ref"])


def test_the_journal_forgets_updated_batches_beyond_the_newest_ones(tmp_path: Path) -> None:
    """A crawl makes a batch a round for as long as it runs: updatedb forgets the updated batches older than the
    newest KEEP_FINISHED (and their leases, once released); unfinished ones and held leases stay."""
    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, "j") as store:
        journal = Journal(store)
        for i in range(6):
            journal.record(f"b{i}", UPDATED if i < 5 else FETCHING)
            store.put_state(f"lease/batch/b{i}", json.dumps({"state": "released", "token": 1}))
            time.sleep(0.002)  # batches are ordered by the time they were recorded
        store.put_state("lease/batch/b1", json.dumps({"state": "held", "token": 2, "expires": time.time() + 60}))
        assert journal.prune(keep=2) == 3
        assert [r.batch_id for r in journal.batches()] == ["b3", "b4", "b5"]
        assert sorted(n for n in store.states("lease/")) == ["lease/batch/b1", "lease/batch/b3", "lease/batch/b4",
                                                              "lease/batch/b5"]
        assert journal.prune(keep=2) == 0


def test_a_long_crawl_keeps_a_journal_of_bounded_size(web: TestWeb, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from nutch2.crawldb import journal
    from tests.crawlutil import cli

    monkeypatch.setattr(journal, "KEEP_FINISHED", 2)
    d = defines(tmp_path, "sqlite")  # the default runner: updatedb's end (and its prune) runs in the command
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", "long", "-rounds", 4, *d) == 0
    with open_store(conf_for(tmp_path, "sqlite"), "long", create=False) as store:
        assert len(Journal(store).batches()) == 2
        assert len(store.states("lease/batch/")) == 2


def test_updatedb_of_a_batch_never_fetched_is_refused_without_force(tmp_path: Path) -> None:
    """updatedb right after generate would release the batch's URLs unfetched: refused, naming fetch and parse;
    -force releases them (due again in a later batch)."""
    d = defines(tmp_path, "sqlite")
    seeds = seed_file(tmp_path, "http://a.example.com/", "http://b.example.com/")
    assert nutch2("inject", seeds, "-crawlId", "nf", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "nf", *d).stdout.strip()
    refused = nutch2("updatedb", batch, "-crawlId", "nf", *d)
    assert refused.returncode == 1, refused.stderr
    assert (f"updatedb: error: batch {batch} was generated but not fetched; updating it now would release its URLs "
            f"unfetched: run `nutch2 fetch {batch} -crawlId nf` and `nutch2 parse {batch} -crawlId nf` first, or "
            "give -force to release it") in refused.stderr
    conf = conf_for(tmp_path, "sqlite")
    assert all(Mark.GENERATE.check(p) == batch for p in table(conf, "nf").values())  # nothing changed
    forced = nutch2("updatedb", batch, "-force", "-crawlId", "nf", *d)
    assert forced.returncode == 0 and "not_fetched=2" in forced.stderr, forced.stderr
    assert not any(Mark.GENERATE.check(p) for p in table(conf, "nf").values())


def test_generate_beside_a_running_crawl_names_it(tmp_path: Path) -> None:
    """A generate that finds every due row in a batch a running crawl works on says so, not 'fetch, parse and
    updatedb it first' (which would step into the crawl's work)."""
    from nutch2.stores import crawler_lease

    d = defines(tmp_path, "sqlite")
    assert nutch2("inject", seed_file(tmp_path, "http://a.example.com/"), "-crawlId", "gc", *d).returncode == 0
    assert nutch2("generate", "-crawlId", "gc", *d).returncode == 0
    with crawler_lease(conf_for(tmp_path, "sqlite"), "gc"):  # as a crawl command holds it
        again = nutch2("generate", "-crawlId", "gc", *d)
    assert again.returncode == 1
    assert "1 is in a batch not yet updated (batch " in again.stderr
    assert "): the crawl running, crawl (pid " in again.stderr and "works on it" in again.stderr, again.stderr
    alone = nutch2("generate", "-crawlId", "gc", *d)
    assert "fetch, parse and updatedb it first" in alone.stderr, alone.stderr
