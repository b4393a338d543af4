"""Fetch claims: what makes a fetch exactly-once per batch when a task dies, is retried or runs twice.

Before a fetcher thread sends a URL's request, the fetch task writes a claim into the row's metadata,
`_ftclaim_ = "<batch>/<run>"` (run: the id of this fetch command's run), and flushes the store; threads that
claim at the same moment share one flush (the store's flush lock is a group commit), and a flush also makes
durable the outcomes written before it. So the store knows every URL whose request may have been sent:

- FETCHED-or-other outcome written: the row carries the fetch mark; nobody requests it again in this batch
  (`-resume`, a retried or re-run task of the same run, a speculative one);
- claimed but never written: its request may have gone out and its answer is lost (kill -9, a lost executor or
  Worker). It is not requested again: it is recorded as a failed fetch — protocol status EXCEPTION
  "fetch result lost", crawl status RETRY — so updatedb counts one retry and the fetch schedule requests it
  again in a later batch, as after any failed fetch.

A fetch without -resume means "fetch this batch again": claims and marks of earlier runs are ignored, those of
its own run are not (its retried attempts skip what its earlier attempts did). updatedb drops the claim.
"""

from __future__ import annotations

from enum import Enum

from nutch2.marks import Mark

CLAIM = "_ftclaim_"  # metadata key: "<batch>/<run>" of the fetch that may have requested the URL
LOST_REASON = "fetch result lost: the task ended after requesting the URL (a retry is counted)"


class Verdict(Enum):
    """What a fetch task does with a generated row."""

    FETCH = "fetch"  # request it
    DONE = "done"  # an outcome is written: skip it
    LOST = "lost"  # claimed, no outcome: record a failed fetch without a request


def claim_value(batch: str, run: str) -> bytes:
    return f"{batch}/{run}".encode()


def claim_of(metadata: dict[str, bytes]) -> tuple[str, str] | None:
    """(batch, run) of a row's claim, or None."""
    raw = metadata.get(CLAIM)
    if not raw:
        return None
    batch, _, run = bytes(raw).decode("utf-8", "replace").partition("/")
    return batch, run


def verdict(markers: dict[str, str], metadata: dict[str, bytes], run: str, resume: bool) -> Verdict:
    """The verdict for a row of the batch as last written: `run` is this fetch's run id; with `resume`, every
    earlier run's work counts, without it only this run's (its earlier attempts)."""
    fetched = markers.get(Mark.FETCH.value) is not None
    claim = claim_of(metadata)
    in_batch = claim is not None and claim[0] == markers.get(Mark.GENERATE.value)
    if resume or (in_batch and claim is not None and claim[1] == run):
        if fetched:
            return Verdict.DONE
        if in_batch:
            return Verdict.LOST
    return Verdict.FETCH


def this_run(metadata: dict[str, bytes], run: str) -> bool:
    """Was the row claimed by this run (an earlier attempt of the same task)?"""
    claim = claim_of(metadata)
    return claim is not None and claim[1] == run


__all__ = ["CLAIM", "LOST_REASON", "Verdict", "claim_value", "claim_of", "verdict", "this_run"]
