"""Launch Library 2 as the replay server serves it, both modes: a launch list's `net__gte` / `net__lt` / `limit` /
`offset`, the page it answers, the recorded launches (this folder's `data/`, byte-for-byte copies) and the
generated ones."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from clkt import clock
from clkt.domains.spaceflight import SPEC
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.replay.catalog import read_recorded
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.query import parse_time, query_int
from clkt.sources._parse import when

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes
    from clkt.replay.stream import Generated

__all__ = ["MAX_LIMIT", "REPLAY", "page", "query", "record"]

MAX_LIMIT = 100
FILES = ("v2.0.0-launch-upcoming.json", "v2.0.0-launch-upcoming-compact.json", "v2.2.0-launch-upcoming-limit5.json")
_STATUS = {"success": (3, "Launch Successful", "Success"), "failure": (4, "Launch Failure", "Failure"),
           "partial failure": (7, "Launch was a Partial Failure", "Partial Failure")}


def query(request: web.Request) -> tuple[datetime | None, datetime | None, int, int]:
    """(net from, net before, offset, limit) of a launch list query."""
    q = request.query
    lo, hi = parse_time(q.get("net__gte")), parse_time(q.get("net__lt"))
    offset, limit = query_int(q, "offset", 0), query_int(q, "limit", 10)
    if offset < 0 or not 1 <= limit <= MAX_LIMIT:
        raise web.HTTPBadRequest(text='{"detail": "limit must be 1-100, offset non-negative"}')
    return lo, hi, offset, limit


def page(request: web.Request, results: list[Any], *, total: int, offset: int, limit: int) -> dict[str, Any]:
    nxt = None
    if offset + limit < total:
        nxt = str(request.url.update_query({"offset": str(offset + limit), "limit": str(limit)}))
    return {"count": total, "next": nxt, "previous": None, "results": results}


def record(g: Generated) -> dict[str, Any]:
    """A generated launch as the API's list record."""
    f = g.facts_as(LaunchFacts)
    sid, name, abbrev = _STATUS[f.outcome]
    r = g.rng("launch")
    return {
        "id": g.external_id, "name": f.name, "net": f.net.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": {"id": sid, "name": name, "abbrev": abbrev}, "failreason": "",
        "launch_service_provider": {"id": r.randint(1000, 9999), "name": f.provider, "type": "Commercial"},
        "rocket": {"id": r.randint(10000, 99999), "configuration": {"full_name": f.rocket, "name": f.rocket}},
        "mission": {"name": f.mission, "type": f.mission_type, "orbit": {"name": f.orbit}},
        "pad": {"name": f.pad, "location": {"name": f.location}},
    }


def _items() -> list[Item]:
    """Every recorded launch (both schema versions), once per id, dated by its `net`."""
    items: dict[str, Item] = {}
    for f in FILES:
        raw = read_recorded(SPEC.package, f"launchlibrary/{f}")
        for r in json.loads(raw)["results"]:
            if r["id"] not in items:
                items[r["id"]] = Item(id=r["id"], occurred=when(r["net"], "net"), listing=r, detail=r)
    return list(items.values())


async def _recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    lo, hi, offset, limit = query(request)
    items = routes.window(SPEC.source, lo, hi)
    chunk = items[offset: offset + limit]
    data = page(request, [s.listing for s in chunk], total=len(items), offset=offset, limit=limit)
    return routes._json(request, data, chunk, conditional=True)


async def _generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    lo, hi, offset, limit = query(request)
    now = clock.now()
    total, items = gen._page(SPEC.source, lo or gen.stream.start, hi or now, offset=offset, limit=limit)
    data = page(request, [record(g) for g in items], total=total, offset=offset, limit=limit)
    return gen._json(request, data, conditional=True)


REPLAY = DomainReplay(
    source=SPEC.source, paths=("/launchlibrary/launch/previous/", "/launchlibrary/launch/upcoming/"), items=_items,
    recorded=_recorded, generated=_generated, lag_s=(1800, 3 * 3600),
    external_id=lambda tag, i: f"c1c8{tag:04x}-0000-4000-8000-{i:012x}",
    id_pattern=re.compile(r"^c1c8(?P<tag>[0-9a-f]{4})-0000-4000-8000-(?P<i>[0-9a-f]{12})$"), id_base=16,
)
