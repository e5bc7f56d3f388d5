"""The replay server's generator mode: the real endpoint shapes over a living stream of fictional entities.

`[replay] mode = "generator"` serves, under the same `/<source>/...` routes as the recordings, what
`clkt.replay.stream.EntityStream` publishes by the process's clock: every list route pages and filters by date
the way the real API (and the recorded routes) do, so the pollers' cursors, lookback and overlap work
unchanged, and every detail route finds an entity from its id (each API's own "not found" otherwise, also
for an entity not yet published). Nothing is kept per entity: a request generates what it lists.

Each route and its answers are its domain folder's (`clkt/domains/<name>/replay.py`, mounted through
`clkt.replay.domains`); each says where it deviates from the real API (all deviations harmless to the pollers).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from email.utils import format_datetime
from functools import partial
from typing import Any

from aiohttp import web

from clkt import clock
from clkt.replay.domains import domain_replays
from clkt.replay.stream import SOURCES, EntityStream, Generated

__all__ = ["GENERATOR_HEADER", "GeneratorRoutes"]

GENERATOR_HEADER = "X-Clkt-Replay-Generated"


def _midnight(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)



class GeneratorRoutes:
    """Handlers over one `EntityStream`; the time is the process's clock at each request."""

    def __init__(self, *, stream: EntityStream) -> None:
        self.stream = stream

    def add_to(self, app: web.Application) -> None:
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
