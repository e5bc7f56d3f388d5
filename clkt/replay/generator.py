"""The replay server's generator mode: the real endpoint shapes over a living stream of fictional entities.

`[replay] mode = "generator"` serves, under the same `/<source>/...` routes as the recordings, what
`clkt.replay.stream.EntityStream` publishes by the process's clock: every list route pages and filters by date
the way the real API (and the recorded routes) do, so the pollers' cursors, lookback and overlap work
unchanged, and every detail route finds an entity from its id (each API's own "not found" otherwise, also
for an entity not yet published). Nothing is kept per entity: a request generates what it lists.

Deviations from the real APIs, all harmless to the pollers: TMDB's `popularity.desc` order is the release
order (`clkt.domains.movies.replay`); Deezer's editorials all list the one stream; a GDACS feed lists the last 7
days of alerts (at most 100); TheSportsDB's matches are soccer matches of fictional competitions in the three
default league ids (`clkt.domains.sports.replay`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from email.utils import format_datetime
from functools import partial
from typing import Any

from aiohttp import web

from clkt import clock
from clkt.replay import payloads
from clkt.replay.domains import domain_replays
from clkt.replay.query import add_api_routes, parse_time, query_int
from clkt.replay.stream import SOURCES, EntityStream, Generated

__all__ = ["GENERATOR_HEADER", "GeneratorRoutes"]

GENERATOR_HEADER = "X-Clkt-Replay-Generated"
USGS_SEARCH_LIMIT = 20000  # the real API refuses a query that matches more


def _midnight(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)



class GeneratorRoutes:
    """Handlers over one `EntityStream`; the time is the process's clock at each request."""

    GDACS_FEED_DAYS = 7
    GDACS_FEED_MAX = 100
    USGS_DEFAULT_DAYS = 30  # the real API's default start: 30 days before now

    def __init__(self, *, stream: EntityStream) -> None:
        self.stream = stream

    def add_to(self, app: web.Application) -> None:
        add_api_routes(app, self)
        for replay in domain_replays().values():
            for path in replay.paths:
                app.router.add_get(path, partial(replay.generated, self))

    def published_so_far(self) -> dict[str, int]:
        """How many entities each source has published by now (for `/_control/info`)."""
        now = clock.now()
        return {s: self.stream.count_between(s, self.stream.start, now, now=now) for s in SOURCES}

    # --- helpers -------------------------------------------------------------------------------------

    def _find(self, source: str, external_id: str) -> Generated | None:
        i = self.stream.index_of(source, external_id)
        if i is None or not self.stream.visible(source, i, now=clock.now()):
            return None
        return self.stream.entity(source, i)

    def _entities(self, source: str, indices: Iterable[int]) -> list[Generated]:
        return [self.stream.entity(source, i) for i in indices]

    @staticmethod
    def _respond(request: web.Request, body: bytes, ctype: str, *, status: int = 200, conditional: bool = False) -> web.Response:
        headers = {"X-Clkt-Replay": "true", GENERATOR_HEADER: "true"}
        if conditional and status == 200:
            etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
            headers["ETag"] = etag
            headers["Last-Modified"] = format_datetime(clock.now().replace(microsecond=0), usegmt=True)
            inm = request.headers.get("If-None-Match")
            if inm is not None and (etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*"):
                return web.Response(status=304, headers=headers)
        return web.Response(status=status, body=body, content_type=ctype, charset="utf-8", headers=headers)

    def _json(self, request: web.Request, data: Any, *, status: int = 200, conditional: bool = False) -> web.Response:
        return self._respond(request, json.dumps(data, ensure_ascii=False).encode(), "application/json",
                             status=status, conditional=conditional)

    def _page(self, source: str, lo: datetime, hi: datetime, *, offset: int, limit: int, newest_first: bool = False,
              ) -> tuple[int, list[Generated]]:
        """(total, the entities at positions [offset, offset + limit)) of the window [lo, hi), oldest first
        unless `newest_first`."""
        now = clock.now()
        total = self.stream.count_between(source, lo, hi, now=now)
        if offset >= total or limit <= 0:
            return total, []
        if not newest_first:
            return total, self._entities(source, self.stream.nth_between(source, lo, hi, now=now, offset=offset, limit=limit))
        first = max(0, total - offset - limit)
        n = total - offset - first
        got = self.stream.nth_between(source, lo, hi, now=now, offset=first, limit=n)
        return total, self._entities(source, reversed(got))

    # --- USGS ----------------------------------------------------------------------------------------

    async def usgs_query(self, request: web.Request) -> web.Response:
        q = request.query
        if "eventid" in q:
            g = self._find("usgs", q["eventid"])
            if g is None:
                return web.Response(status=404, text="Error 404: Not Found\n\nUnknown eventid\n",
                                    headers={"X-Clkt-Replay": "true", GENERATOR_HEADER: "true"})
            return self._json(request, payloads.usgs_feature(g))
        now = clock.now()
        end = parse_time(q.get("endtime")) or now
        start = parse_time(q.get("starttime")) or (now - timedelta(days=self.USGS_DEFAULT_DAYS))
        try:
            minmag = float(q["minmagnitude"]) if "minmagnitude" in q else None
            maxmag = float(q["maxmagnitude"]) if "maxmagnitude" in q else None
        except ValueError:
            raise web.HTTPBadRequest(text="Bad minmagnitude/maxmagnitude") from None
        limit = query_int(q, "limit", USGS_SEARCH_LIMIT)
        offset = query_int(q, "offset", 1)
        if limit < 1 or limit > USGS_SEARCH_LIMIT or offset < 1:
            raise web.HTTPBadRequest(text="Bad limit/offset")
        # the end is inclusive at the API (the start too): [start, end + 1 s) at its second precision
        window_end = end + timedelta(seconds=1)
        if self.stream.count_between("usgs", start, window_end, now=now) > USGS_SEARCH_LIMIT:
            raise web.HTTPBadRequest(text=f"Error 400: Bad Request\n\n{USGS_SEARCH_LIMIT} matching events exceeds search limit")
        features = []
        for i in self.stream.occurred_between("usgs", start, window_end, now=now):
            f = payloads.usgs_feature(self.stream.entity("usgs", i))
            mag = f["properties"]["mag"]
            if (minmag is not None and mag < minmag) or (maxmag is not None and mag > maxmag):
                continue
            features.append(f)
        order = q.get("orderby", "time")
        if order.startswith("magnitude"):
            features.sort(key=lambda f: (f["properties"]["mag"], f["id"]), reverse=order == "magnitude")
        elif order == "time":
            features.reverse()  # newest first, the API's default
        chunk = features[offset - 1: offset - 1 + limit]
        data = {
            "type": "FeatureCollection",
            "metadata": {"generated": int(now.timestamp() * 1000), "url": str(request.url),
                         "title": "USGS Earthquakes (clkt replay: generated, fictional)", "status": 200,
                         "api": "1.12.3", "limit": limit, "offset": offset, "count": len(chunk)},
            "features": chunk,
        }
        return self._json(request, data, conditional=True)

    # --- GDACS ---------------------------------------------------------------------------------------

    async def gdacs_rss(self, request: web.Request) -> web.Response:
        now = clock.now()
        _, items = self._page("gdacs", now - timedelta(days=self.GDACS_FEED_DAYS), now, offset=0,
                              limit=self.GDACS_FEED_MAX, newest_first=True)
        body = payloads.GDACS_HEAD + "\n    ".join(
            payloads.gdacs_item(g, event_type=self.stream.gdacs_type(g.index)) for g in items) + payloads.GDACS_TAIL
        return self._respond(request, body.encode("utf-8"), "application/rss+xml", conditional=True)
