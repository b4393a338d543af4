"""Fetch claims: what makes a fetch finish every URL of a batch, once, when a task dies, is retried or runs twice.

Before a fetcher thread sends a URL's request, the fetch task writes a claim into the row's metadata,
`_ftclaim_ = "<batch>/<run>/<n>"` (run: the id of this fetch command's run; n: how many times this batch's fetches
claimed the URL), and flushes the store; threads that claim at the same moment share one flush (the store's flush
lock is a group commit), and a flush also makes durable the outcomes written before it. So the store knows every
URL whose request may have been sent:

- an outcome written (FETCHED or any other): the row carries the fetch mark; nobody requests it again in this
  batch (`-resume`, a retried or re-run task of the same run, a speculative one);
- claimed, no outcome: its owner is gone (kill -9, a lost executor or Worker) with the request unsent or in
  flight. The next attempt takes the claim over and requests the URL once more (counted `refetched_in_flight`):
  a site gets at most one extra request for a URL that was in flight, and the rows end as an uninterrupted
  fetch's;
- claimed MAX_CLAIMS times, no outcome: every attempt that requested it died (a page that kills its fetcher).
  It is not requested again in this batch: it is recorded as a failed fetch — protocol status EXCEPTION "fetch
  result lost", crawl status RETRY — so updatedb counts one retry and the fetch schedule decides when to try it.

A fetch without -resume means "fetch this batch again": claims and marks of earlier runs are ignored, those of
its own run are not (its retried attempts go on from what its earlier attempts did). updatedb drops the claim.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from nutch2.marks import Mark
from nutch2.rowkeys import CLAIM

MAX_CLAIMS = 2  # requests of one URL in one batch whose answers were lost before it is recorded as failed
LOST_REASON = "fetch result lost: every fetch that requested the URL ended before its answer (a retry is counted)"


class Verdict(Enum):
    """What a fetch task does with a generated row."""

    FETCH = "fetch"  # request it
    REFETCH = "refetch"  # claimed by an attempt that is gone, no outcome: request it once more
    DONE = "done"  # an outcome is written: skip it
    LOST = "lost"  # claimed MAX_CLAIMS times, no outcome: record a failed fetch without a request


class Claim(NamedTuple):
    batch: str
    run: str
    count: int  # claims of the URL in this batch so far


def claim_value(batch: str, run: str, count: int = 1) -> bytes:
    return f"{batch}/{run}/{count}".encode()


def claim_of(metadata: dict[str, bytes]) -> Claim | None:
    """A row's claim, or None (a claim written before counts were kept counts as one)."""
    raw = metadata.get(CLAIM)
    if not raw:
        return None
    batch, _, rest = bytes(raw).decode("utf-8", "replace").partition("/")
    run, _, count = rest.partition("/")
    return Claim(batch, run, int(count) if count.isdigit() else 1)


def _counts(claim: Claim | None, markers: dict[str, str], run: str, resume: bool) -> bool:
    """Does the claim belong to this fetch of the batch (with `resume` every run's, else this run's)?"""
    return (claim is not None and claim.batch == markers.get(Mark.GENERATE.value)
            and (resume or claim.run == run))


def verdict(markers: dict[str, str], metadata: dict[str, bytes], run: str, resume: bool) -> Verdict:
    """The verdict for a row of the batch as last written: `run` is this fetch's run id; with `resume`, every
    earlier run's work counts, without it only this run's (its earlier attempts)."""
    claim = claim_of(metadata)
    if resume or (claim is not None and claim.run == run):
        if markers.get(Mark.FETCH.value) is not None:
            return Verdict.DONE
        if _counts(claim, markers, run, resume):
            return Verdict.LOST if claim.count >= MAX_CLAIMS else Verdict.REFETCH  # type: ignore[union-attr]
    return Verdict.FETCH


def next_claim(metadata: dict[str, bytes], markers: dict[str, str], batch: str, run: str, resume: bool) -> bytes:
    """The claim this run writes before requesting a URL: one more than the claim it takes over, if any."""
    claim = claim_of(metadata)
    taken = claim.count if _counts(claim, markers, run, resume) and claim is not None else 0
    return claim_value(batch, run, taken + 1)


def this_run(metadata: dict[str, bytes], run: str) -> bool:
    """Was the row claimed by this run (an earlier attempt of the same task)?"""
    claim = claim_of(metadata)
    return claim is not None and claim.run == run


__all__ = ["CLAIM", "MAX_CLAIMS", "LOST_REASON", "Claim", "Verdict", "claim_value", "claim_of", "verdict",
           "next_claim", "this_run"]
