"""Marks carried in a row's markers map (Nutch's storage/Mark.java), and the `dist` marker."""

from __future__ import annotations

import re
from enum import StrEnum

from nutch2.webpage import WebPage


class Mark(StrEnum):
    """A mark's key in the markers map."""

    INJECT = "_injmrk_"
    GENERATE = "_gnmrk_"
    FETCH = "_ftcmrk_"
    PARSE = "__prsmrk__"
    UPDATEDB = "_updmrk_"
    INDEX = "_idxmrk_"

    def put(self, page: WebPage, value: str) -> None:
        page.markers[self.value] = value

    def remove(self, page: WebPage) -> str | None:
        """Remove the mark; return the value it had (None if absent)."""
        if self.value in page.markers:
            return page.markers.pop(self.value)
        return None

    def check(self, page: WebPage) -> str | None:
        """The mark's value, or None when the row does not carry it."""
        return page.markers.get(self.value)

    def remove_if_exists(self, page: WebPage) -> str | None:
        return self.remove(page)


DIST = "dist"
# a marker updatedb wrote on the rows it linked before its run id moved to their metadata (rowkeys.UPDATE_RUN);
# nothing reads it: updatedb drops it from the rows it writes
OLD_UPDATE_RUN = "updrun"
_BATCH_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def valid_batch_id(batch_id: str) -> bool:
    """Batch ids name files (locks) and journal entries: letters, digits, '_', '-', '.', at most 64."""
    return _BATCH_ID.fullmatch(batch_id) is not None


def get_distance(page: WebPage) -> int | None:
    """Link distance from the seeds (0 for injected rows), or None when unknown."""
    value = page.markers.get(DIST)
    return int(value) if value is not None else None


def set_distance(page: WebPage, dist: int) -> None:
    page.markers[DIST] = str(dist)
