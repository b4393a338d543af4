"""The advice of a command's error in the job API's terms: a -D property as the job's conf, a command to copy as
the job to submit, -force as its arg; what is no job stays as it is."""

from __future__ import annotations

from nutch2.searcher.jobapi import as_job_advice


def test_a_command_to_copy_becomes_the_job_to_submit() -> None:
    assert as_job_advice("batch B was partly fetched; finish it with `nutch2 fetch B -resume -crawlId news`, or "
                         "give -force to fetch every page again") == (
        'batch B was partly fetched; finish it with the job `{"type": "fetch", "args": {"batch": "B", "resume": '
        'true}}`, or give "force": true in the args to fetch every page again')
    assert as_job_advice("finish them with `nutch2 fetch -all -resume -crawlId x`") == (
        'finish them with the job `{"type": "fetch", "args": {"all": true, "resume": true}}`')
    assert as_job_advice("check the id printed by `nutch2 generate` (or use -all)") == (
        "check the id printed by a generate job (or use -all)")
    assert as_job_advice("set it with -D http.agent.name=Bot; then") == (
        'set it with "conf": {"http.agent.name": "Bot"} in the job; then')


def test_what_is_no_job_stays() -> None:
    for text in ("start it with `nutch2 server -port 3`", "see `nutch2 nope x`", "try `nutch2 fetch -bogus`"):
        assert as_job_advice(text) == text
