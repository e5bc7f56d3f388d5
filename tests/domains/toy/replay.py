"""The lighthouse API on the replay server: the recorded list (`data/lighthouses.json`) and generated ones."""

from __future__ import annotations

import json
import re
from datetime import UTC
from importlib import resources
from typing import Any

from aiohttp import web

from clkt import clock
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.generator import GeneratorRoutes
from clkt.replay.query import parse_time, query_int
from clkt.replay.routes import ReplayRoutes
from clkt.replay.stream import Generated
from clkt.sources._parse import when
from tests.domains.toy import SPEC
from tests.domains.toy.facts import LighthouseFacts


def _items() -> list[Item]:
    raw = resources.files(SPEC.package).joinpath("data", "lighthouses.json").read_text(encoding="utf-8")
    return [Item(id=r["id"], occurred=when(r["lit"], "lit"), listing=r) for r in json.loads(raw)["results"]]


def _query(request: web.Request) -> tuple[Any, Any, int, int]:
    q = request.query
    return parse_time(q.get("lit_gte")), parse_time(q.get("lit_lt")), query_int(q, "offset", 0), query_int(q, "limit", 10)


def _record(g: Generated) -> dict[str, Any]:
    f = g.facts_as(LighthouseFacts)
    return {"id": g.external_id, "name": f.name, "lit": g.occurred.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "height_m": f.height_m, "keeper": f.keeper}


async def _recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    lo, hi, offset, limit = _query(request)
    items = routes.window(SPEC.source, lo, hi)
    chunk = items[offset: offset + limit]
    data = {"results": [s.listing for s in chunk], "next": offset + limit < len(items)}
    return routes._json(request, data, chunk, conditional=True)


async def _generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    lo, hi, offset, limit = _query(request)
    total, items = gen._page(SPEC.source, lo or gen.stream.start, hi or clock.now(), offset=offset, limit=limit)
    return gen._json(request, {"results": [_record(g) for g in items], "next": offset + limit < total})


REPLAY = DomainReplay(
    source=SPEC.source, paths=(f"/{SPEC.source}/lighthouses",), items=_items, recorded=_recorded,
    generated=_generated, lag_s=(60, 600), external_id=lambda tag, i: f"lh{tag:03d}-{i:09d}",
    id_pattern=re.compile(r"^lh(?P<tag>\d{3})-(?P<i>\d{9})$"),
)
