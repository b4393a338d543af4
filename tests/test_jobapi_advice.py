"""The advice of a command's error in the job API's terms: a -D property as the job's conf, a command to copy as
the job to submit, -force as its arg; what is no job stays as it is."""

from __future__ import annotations

from pathlib import Path

from nutch2.config import Configuration
from nutch2.errors import StoreUnavailable
from nutch2.searcher.jobapi import JobInfo, JobManager, as_job_advice
from nutch2.stores import crawl_exists
from nutch2.tools.base import Run
from nutch2.tools.crawl import Crawl, CrawlArgs


def test_a_command_to_copy_becomes_the_job_to_submit() -> None:
    assert as_job_advice("batch B was partly fetched; finish it with `nutch2 fetch B -resume -crawlId news`, or "
                         "give -force to fetch every page again") == (
        'batch B was partly fetched; finish it with the job `{"type": "fetch", "args": {"batch": "B", "resume": '
        'true}}`, or give "force": true in the args to fetch every page again')
    assert as_job_advice("finish them with `nutch2 fetch -all -resume -crawlId x`") == (
        'finish them with the job `{"type": "fetch", "args": {"all": true, "resume": true}}`')
    assert as_job_advice("check the id printed by `nutch2 generate` (or use -all)") == (
        'check the id printed by a generate job (or give "all": true in the args)')
    assert as_job_advice("set it with -D http.agent.name=Bot; then") == (
        'set it with "conf": {"http.agent.name": "Bot"} in the job; then')


def test_what_is_no_job_stays() -> None:
    for text in ("start it with `nutch2 server -port 3`", "see `nutch2 nope x`", "try `nutch2 fetch -bogus`"):
        assert as_job_advice(text) == text


class _StoreGoesAway(Crawl):
    """A crawl whose store stops answering (a PostgreSQL restart) after `started` jobs of it began."""

    started = 1

    def execute(self, run: Run) -> int:
        for _ in range(self.started):
            run.job_counters("generate")
        raise StoreUnavailable("cannot reach PostgreSQL at postgresql://db/nutch2 (connection refused)")


def test_a_job_whose_store_went_away_mid_crawl_says_how_it_goes_on(tmp_path: Path) -> None:
    """The CLI says "once it answers again, run `...` to go on"; a job of the API said only that the store is
    unreachable, and an operator of a continuous crawl job was not told that submitting it again goes on."""
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {"storage.data.dir": str(tmp_path)})
    manager = JobManager(conf, "news")
    args = CrawlArgs(continuous=True)
    info = JobInfo("j1", "crawl", "news", {"continuous": True})
    manager._run(info, _StoreGoesAway(conf, "news", args))
    assert info.state == "FAILED"
    assert info.msg == ("nutch2 crawl: error: cannot reach PostgreSQL at postgresql://db/nutch2 (connection "
                        "refused); once it answers again, submit the same job to go on")
    tool = _StoreGoesAway(conf, "news", args)
    tool.started = 0  # down before any job began: nothing to go on from, the line alone
    info = JobInfo("j2", "crawl", "news", {"continuous": True})
    manager._run(info, tool)
    assert info.msg == "nutch2 crawl: error: cannot reach PostgreSQL at postgresql://db/nutch2 (connection refused)"


def test_an_inject_job_names_the_seed_lines_it_rejected(tmp_path: Path) -> None:
    """A terminal sees every bad seed line logged; a client of the job API saw only rejected=2 in the counters,
    not which lines or why. The result names them (the first 20), and the seed hosts the address guard refuses."""
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {
        "storage.data.dir": str(tmp_path), "inject.address.check.seconds": 5, "http.agent.name": "SeedBot"})
    manager = JobManager(conf, "seeds")
    info = manager.submit("inject", {"seedUrls": ["http://a.example/ok", "http://b.example/with space",
                                                  "http://127.0.0.1:9/", "http://c.example/\tnutch.score=x"]})
    assert info.thread is not None
    info.thread.join(60)
    shown = info.to_json()
    assert shown["state"] == "FINISHED", shown
    assert shown["counters"]["inject"]["rejected"] == 2
    rejected = shown["result"]["rejectedLines"]
    assert rejected == ["seedUrls[1]: URL contains whitespace: 'http://b.example/with space' (separate metadata with "
                        "tabs)", "seedUrls[3]: nutch.score is not a number"]
    assert shown["result"]["refusedHosts"] == ["127.0.0.1:9"]
    # a crawl job injects the request's seeds the same way
    info = manager.submit("crawl", {"seedUrls": ["http://d.example/a b"], "rounds": 1})
    assert info.thread is not None
    info.thread.join(60)
    assert info.to_json()["result"]["rejectedLines"] == [
        "seedUrls[0]: URL contains whitespace: 'http://d.example/a b' (separate metadata with tabs)"]


def test_an_inject_job_does_not_call_hosts_the_server_allows_refused(tmp_path: Path) -> None:
    """A seed host that the server's fetcher.address.allow lists is fetched: the inject job's result and log line
    named it among the hosts "the address guard keeps refusing", with the advice to list it there."""
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {
        "storage.data.dir": str(tmp_path), "inject.address.check.seconds": 5, "http.agent.name": "SeedBot",
        "fetcher.address.allow": "127.0.1.0/24,localhost"})
    manager = JobManager(conf, "allowed")
    info = manager.submit("inject", {"seedUrls": ["http://127.0.1.5:9/", "http://localhost:9/",
                                                  "http://127.0.0.1:9/"]})
    assert info.thread is not None
    info.thread.join(60)
    shown = info.to_json()
    assert shown["state"] == "FINISHED" and shown["counters"]["inject"]["injected"] == 3, shown
    assert shown["result"]["refusedHosts"] == ["127.0.0.1:9"], shown["result"]
    # with all of them allowed, none is named
    conf.set("fetcher.address.allow", "127.0.0.0/8")
    info = manager.submit("inject", {"seedUrls": ["http://127.0.1.5:9/", "http://127.0.0.1:9/"]})
    assert info.thread is not None
    info.thread.join(60)
    assert "refusedHosts" not in info.to_json()["result"], info.to_json()


def test_an_inject_job_of_only_rejected_lines_leaves_no_crawl_behind(tmp_path: Path) -> None:
    """The CLI's inject creates no crawl when it injects nothing; the job API's created the table before the job
    ran (to check the crawl's lock), so the job's own clean-up saw a crawl that existed before it."""
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {
        "storage.data.dir": str(tmp_path), "http.agent.name": "SeedBot"})
    manager = JobManager(conf, "fresh")
    info = manager.submit("inject", {"seedUrls": ["http://a.example/a b", "not a url"]})
    assert info.thread is not None
    info.thread.join(60)
    shown = info.to_json()
    assert shown["state"] == "FAILED" and "was not created" in shown["msg"], shown
    assert crawl_exists(conf, "fresh") is False
    # one that injects creates it, as before
    info = manager.submit("inject", {"seedUrls": ["http://a.example/"]})
    assert info.thread is not None
    info.thread.join(60)
    assert info.to_json()["state"] == "FINISHED" and crawl_exists(conf, "fresh") is True


def test_a_jobs_bad_args_are_named_as_the_client_sends_them(tmp_path: Path) -> None:
    """The job API takes {"batch": ..., "all": true}; its refusals named the command line's -all, <batchId> and
    OUTDIR, which a client cannot send."""
    import pytest

    from nutch2.searcher.params import ParamError

    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {"storage.data.dir": str(tmp_path)})
    manager = JobManager(conf, "args")
    for job, args, message in (
            ("index", {}, "index: give exactly one of args.batch or args.all"),
            ("fetch", {"batch": "B", "all": True}, "fetch: give exactly one of args.batch or args.all"),
            ("warc", {"all": True}, "warc: args.outdir is required"),
            ("generate", {"topN": "x"}, "generate: args.topN must be a whole number"),
            ("crawl", {"rounds": 0}, "crawl: args.rounds 0 does nothing"),
            ("readdb", {}, "readdb: give one of args.stats, args.url URL or args.dump DIR")):
        with pytest.raises(ParamError) as e:
            manager.build(job, args)
        assert str(e.value).startswith(message), (job, str(e.value))
