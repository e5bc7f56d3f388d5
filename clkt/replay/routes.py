"""The real endpoint shapes, one handler per route, under `/<source>/...`.

Every handler serves the catalog's recorded items (re-dated when the server says so), filtered and paged
the way the real API does it. Detail routes answer each API's own "not found" for ids that were never
recorded. List routes support ETag / If-Modified-Since (304).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from email.utils import format_datetime, parsedate_to_datetime
from functools import partial
from typing import Any

from aiohttp import web

from clkt.replay.catalog import Catalog, Item
from clkt.replay.domains import DomainReplay, domain_replays
from clkt.replay.redate import RedatePlan, shift_json, shift_text, text_variants

__all__ = ["ORIGINALS_HEADER", "REDATED_HEADER", "REPLAY_HEADER", "ReplayRoutes", "Served"]

REPLAY_HEADER = "X-Clkt-Replay"
REDATED_HEADER = "X-Clkt-Replay-Redated"
ORIGINALS_HEADER = "X-Clkt-Replay-Original-Dates"  # JSON {item id: original ISO datetime}


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


def _serve(item: Item, plan: RedatePlan | None, replay: DomainReplay | None) -> Served:
    if plan is None:
        return Served(item=item, occurred=item.occurred, listing=item.listing, detail=item.detail, extras=item.extras)
    delta = plan.delta(item.id)
    occurred = item.occurred + delta
    years = round(delta.days / 365.2425)  # seasons ("2014-2015") move by whole years, nearest
    if isinstance(item.listing, str):  # an XML element kept as text
        variants = list(zip(text_variants(item.occurred), text_variants(occurred), strict=True))
        xml = shift_text(item.listing, delta, variants=variants)
        if replay is not None and replay.retext is not None:
            xml = replay.retext(xml, occurred)
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
        self.plans = plans  # each source's re-dating plan (None: served as recorded)
        replays = domain_replays()
        self.served: dict[str, list[Served]] = {
            src: [_serve(it, plans.get(src) if plans else None, replays.get(src)) for it in items]
            for src, items in catalog.items.items()
        }
        self.last_modified = started.replace(microsecond=0)

    def add_to(self, app: web.Application) -> None:
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
