"""The real endpoint shapes, one handler per route, under `/<source>/...`.

Every handler serves the catalog's recorded items (re-dated when the server says so), filtered and paged
the way the real API does it. Detail routes answer each API's own "not found" for ids that were never
recorded. List routes support ETag / If-Modified-Since (304).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from email.utils import format_datetime, parsedate_to_datetime
from functools import partial
from typing import Any

from aiohttp import web

from clkt.replay.catalog import Catalog, Item
from clkt.replay.domains import domain_replays
from clkt.replay.query import add_api_routes, parse_time, query_int
from clkt.replay.redate import RedatePlan, shift_json, shift_text, text_variants

__all__ = ["ORIGINALS_HEADER", "REDATED_HEADER", "REPLAY_HEADER", "ReplayRoutes", "Served"]

REPLAY_HEADER = "X-Clkt-Replay"
REDATED_HEADER = "X-Clkt-Replay-Redated"
ORIGINALS_HEADER = "X-Clkt-Replay-Original-Dates"  # JSON {item id: original ISO datetime}
_YEAR_TAG = re.compile(r"(<gdacs:year>)(\d{4})(</gdacs:year>)")


@dataclass(frozen=True)
class Served:
    """One catalog item as this server presents it (shifted when re-dating)."""

    item: Item
    occurred: datetime
    listing: Any
    detail: Any | None
    extras: dict[str, Any]

    @property
    def id(self) -> str:
        return self.item.id


def _serve(item: Item, plan: RedatePlan | None) -> Served:
    if plan is None:
        return Served(item=item, occurred=item.occurred, listing=item.listing, detail=item.detail, extras=item.extras)
    delta = plan.delta(item.id)
    occurred = item.occurred + delta
    years = round(delta.days / 365.2425)  # seasons ("2014-2015") move by whole years, nearest
    if isinstance(item.listing, str):  # GDACS XML item
        variants = list(zip(text_variants(item.occurred), text_variants(occurred), strict=True))
        xml = shift_text(item.listing, delta, variants=variants)
        xml = _YEAR_TAG.sub(lambda m: f"{m.group(1)}{occurred.year}{m.group(3)}", xml)
        return Served(item=item, occurred=occurred, listing=xml, detail=None, extras={})
    return Served(
        item=item,
        occurred=occurred,
        listing=shift_json(item.listing, delta, years=years),
        detail=shift_json(item.detail, delta, years=years) if item.detail is not None else None,
        extras={k: shift_json(v, delta, years=years) for k, v in item.extras.items()},
    )



class ReplayRoutes:
    """Handlers bound to one catalog and one re-dating plan. Page sizes are tunable class constants."""


    def __init__(self, *, catalog: Catalog, plans: dict[str, RedatePlan] | None, started: datetime) -> None:
        self.catalog = catalog
        self.redated = plans is not None
        self.served: dict[str, list[Served]] = {
            src: [_serve(it, plans.get(src) if plans else None) for it in items] for src, items in catalog.items.items()
        }
        self.last_modified = started.replace(microsecond=0)
        self.gdacs_head, self.gdacs_tail = catalog.gdacs_head, catalog.gdacs_tail
        if plans and catalog.items.get("gdacs"):  # the channel's own dates move with its newest item
            newest = max(catalog.items["gdacs"], key=lambda it: it.occurred)
            delta = plans["gdacs"].delta(newest.id)
            self.gdacs_head = shift_text(self.gdacs_head, delta)
            self.gdacs_tail = shift_text(self.gdacs_tail, delta)

    def add_to(self, app: web.Application) -> None:
        add_api_routes(app, self)
        for replay in domain_replays().values():
            for path in replay.paths:
                app.router.add_get(path, partial(replay.recorded, self))

    # --- helpers -------------------------------------------------------------------------------------

    def _find(self, source: str, item_id: str) -> Served | None:
        for s in self.served.get(source, []):
            if s.id == item_id:
                return s
        return None

    def window(self, source: str, lo: datetime | None, hi: datetime | None) -> list[Served]:
        """`source`'s items that occurred in [lo, hi) (an open end: None), oldest first (a list query's answer)."""
        items = [s for s in self.served[source] if (lo is None or s.occurred >= lo) and (hi is None or s.occurred < hi)]
        return sorted(items, key=lambda s: (s.occurred, s.id))

    def _headers(self, items: Iterable[Served]) -> dict[str, str]:
        h = {REPLAY_HEADER: "true"}
        if self.redated:
            h[REDATED_HEADER] = "true"
            h[ORIGINALS_HEADER] = json.dumps({s.id: s.item.occurred.isoformat() for s in items}, separators=(",", ":"))
        return h

    def _json(self, request: web.Request, data: Any, items: Iterable[Served], *, status: int = 200,
              conditional: bool = False) -> web.Response:
        body = json.dumps(data, ensure_ascii=False).encode()
        return self._respond(request, body, "application/json", items, status=status, conditional=conditional)

    def _respond(self, request: web.Request, body: bytes, ctype: str, items: Iterable[Served], *, status: int = 200,
                 conditional: bool = False) -> web.Response:
        headers = self._headers(items)
        if conditional and status == 200:
            etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
            headers["ETag"] = etag
            headers["Last-Modified"] = format_datetime(self.last_modified, usegmt=True)
            inm = request.headers.get("If-None-Match")
            ims = request.headers.get("If-Modified-Since")
            if inm is not None:
                if etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*":
                    return web.Response(status=304, headers=headers)
            elif ims:
                try:
                    if parsedate_to_datetime(ims) >= self.last_modified:
                        return web.Response(status=304, headers=headers)
                except (TypeError, ValueError):
                    pass
        return web.Response(status=status, body=body, content_type=ctype, charset="utf-8", headers=headers)

    @staticmethod
    def _window(items: list[Served], lo: date | None, hi: date | None, key: Callable[[Served], date | None]) -> list[Served]:
        out = []
        for s in items:
            d = key(s)
            if d is None:
                continue
            if lo is not None and d < lo:
                continue
            if hi is not None and d > hi:
                continue
            out.append(s)
        return out

    # --- USGS ----------------------------------------------------------------------------------------

    async def usgs_query(self, request: web.Request) -> web.Response:
        q = request.query
        if "eventid" in q:
            s = self._find("usgs", q["eventid"])
            if s is None or s.detail is None:
                return web.Response(status=404, text="Error 404: Not Found\n\nUnknown eventid\n", headers=self._headers([]))
            return self._json(request, s.detail, [s])
        start, end = parse_time(q.get("starttime")), parse_time(q.get("endtime"))
        try:
            minmag = float(q["minmagnitude"]) if "minmagnitude" in q else None
            maxmag = float(q["maxmagnitude"]) if "maxmagnitude" in q else None
        except ValueError:
            raise web.HTTPBadRequest(text="Bad minmagnitude/maxmagnitude") from None
        limit = query_int(q, "limit", 20000)
        offset = query_int(q, "offset", 1)
        if limit < 1 or limit > 20000 or offset < 1:
            raise web.HTTPBadRequest(text="Bad limit/offset")
        items = []
        for s in self.served["usgs"]:
            mag = s.listing["properties"].get("mag")
            if (start and s.occurred < start) or (end and s.occurred > end):
                continue
            if minmag is not None and (mag is None or mag < minmag):
                continue
            if maxmag is not None and (mag is None or mag > maxmag):
                continue
            items.append(s)
        order = q.get("orderby", "time")
        if order.startswith("magnitude"):
            items.sort(key=lambda s: (s.listing["properties"].get("mag") or 0, s.id), reverse=order == "magnitude")
        else:
            items.sort(key=lambda s: (s.occurred, s.id), reverse=order == "time")
        chunk = items[offset - 1: offset - 1 + limit]
        data = {
            "type": "FeatureCollection",
            "metadata": {"generated": int(self.last_modified.timestamp() * 1000), "url": str(request.url),
                         "title": "USGS Earthquakes", "status": 200, "api": "1.12.3", "limit": limit,
                         "offset": offset, "count": len(chunk)},
            "features": [s.listing for s in chunk],
        }
        return self._json(request, data, chunk, conditional=True)

    # --- GDACS ---------------------------------------------------------------------------------------

    async def gdacs_rss(self, request: web.Request) -> web.Response:
        items = sorted(self.served["gdacs"], key=lambda s: (s.occurred, s.id), reverse=True)
        xml = self.gdacs_head + "\n    ".join(s.listing for s in items) + self.gdacs_tail
        return self._respond(request, xml.encode("utf-8"), "application/rss+xml", items, conditional=True)
