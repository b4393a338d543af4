"""The dashboard's hosts page (/hosts): the host table `nutch2 updatehostdb` keeps, one record per host read, never
a row; sorted by a field, filtered by a readhostdb -expr expression."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from nutch2.crawldb.hostdb import EXPR_NAMES, STORED, hosts
from nutch2.crawldb.hostexpr import HostExpr
from nutch2.errors import ConfigError
from nutch2.searcher.params import ParamError, int_param

SORTS = tuple(f for f in STORED if f not in ("homepageUrl", "lastCheck"))  # what ?sort may name


def hosts_page(request: Request, ctx: Callable[..., dict[str, Any]]) -> Response:
    """?sort=FIELD (numRecords: most first), ?expr=E (readhostdb's -expr), ?top=N hosts shown."""
    s = request.app.state.searcher
    params = request.query_params
    sort = params.get("sort") or "numRecords"
    if sort not in SORTS and sort != "host":
        raise ParamError(f"sort={sort[:40]!r} is not a host field; use host or one of {', '.join(SORTS)}")
    top = int_param(params, "top", 100, 1, 10_000, clamp=True)
    text = (params.get("expr") or "").strip()
    try:
        expr = HostExpr(text, EXPR_NAMES, "expr") if text else None
        table = [(h, d) for h, d in s.store.run(lambda store: list(hosts(store)))
                 if expr is None or expr.holds(d.values(h))]
    except ConfigError as e:
        raise ParamError(str(e)) from None
    if sort != "host":
        table.sort(key=lambda hd: (-getattr(hd[1], sort), hd[0]))
    checked = max((d.lastCheck for _, d in table), default=0)
    rows = [{"host": h, **d.to_dict(), "scoreAvg": d.scoreAvg} for h, d in table[:top]]
    return s.templates.TemplateResponse(request, "hosts.html", ctx(
        request, rows=rows, count=len(table), sort=sort, sorts=("host", *SORTS), expr=text, top=top,
        checked=datetime.fromtimestamp(checked / 1000, UTC).isoformat(timespec="seconds") if checked else None))
