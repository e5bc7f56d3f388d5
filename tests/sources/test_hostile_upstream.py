"""A hostile upstream against the real poller and a real SQLite store: one bad record among good ones
(a list item without its id, a detail with latitude 200, a lone surrogate, deeply nested JSON, a body over
the size limit, an HTML error page echoing the API key) leaves every good record stored, counts every bad
one with its reason, moves the cursor past the page, and never lets the key reach the store."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import func, select

from clkt.context import ServiceContext
from clkt.replay.server import ReplayServer
from storage.engine import Store
from storage.entities import load_cursor, skip_counts
from storage.models import Document, Entity, SkipCount, Stage, Task

from .conftest import poller_for, settings_for
from .test_parsers import data

MakeCtx = Callable[..., ServiceContext]
KEY = "s3cr3t-tmdb-key-0123456789"


def _quake(ext: str, **props: Any) -> dict[str, Any]:
    q = copy.deepcopy(data("usgs/fdsnws-event-ci3144585.json"))
    q["id"] = ext
    q["properties"].update(props)
    q["properties"]["time"] = 1772150400000  # 2026-02-27, inside the test window
    return q


GOOD = ["good1", "good2", "good3"]
# each detail id -> the body served for it (bytes)
DETAILS: dict[str, bytes] = {
    "good1": json.dumps(_quake("good1")).encode(),
    "good2": json.dumps(_quake("good2", title="M 6.1 - \\ud800 lone surrogate")).encode().replace(b"\\\\ud800", b"\\ud800"),
    "good3": json.dumps(_quake("good3")).encode(),
    "lat200": json.dumps(_quake("lat200") | {"geometry": {"type": "Point", "coordinates": [10.0, 200.0, 10.0]}}).encode(),
    "deep": ("{\"a\":" * 3000 + "1" + "}" * 3000).encode(),
    "huge": json.dumps(_quake("huge", place="x" * 300_000)).encode(),
    "mag": json.dumps(_quake("mag", mag=-999)).encode(),
    "typeerr": json.dumps(_quake("typeerr", alert=None, products={"losspager": 5})).encode(),  # TypeError inside
}


def _list_page() -> bytes:
    feats: list[Any] = [{"id": i, "properties": {"title": i}} for i in DETAILS]
    feats.insert(1, {"properties": {"title": "no id"}})  # a list item without its id
    feats.insert(3, "not an object")
    feats.insert(4, {"id": {"nested": True}, "properties": {}})
    return json.dumps({"type": "FeatureCollection", "features": feats}).encode()


@pytest.fixture
async def hostile(aiohttp_server: Any) -> Any:
    async def query(request: web.Request) -> web.Response:
        ev = request.query.get("eventid")
        if ev is None:
            return web.Response(body=_list_page(), content_type="application/json")
        return web.Response(body=DETAILS[ev], content_type="application/json")

    async def tmdb_discover(request: web.Request) -> web.Response:
        page = {"page": 1, "total_pages": 1, "results": [
            {"id": 1, "title": "Good", "release_date": "2026-02-20"},
            {"id": 2, "title": "To be announced", "release_date": "TBA"},
            {"title": "no id"},
        ]}
        return web.Response(body=json.dumps(page).encode(), content_type="application/json")

    async def tmdb_movie(request: web.Request) -> web.Response:
        mid = request.match_info["id"]
        if mid == "2":
            # a proxy's HTML error page that echoes the request URL, key included
            return web.Response(text=f"<html><body>Bad gateway for {request.url}</body></html>",
                                content_type="text/html")
        d = data("tmdb/movie-details-550.json") | {"id": int(mid), "release_date": "2026-02-20"}
        d["credits"] = {k: v for k, v in data("tmdb/movie-credits-550.json").items() if k != "id"}
        return web.Response(body=json.dumps(d).encode(), content_type="application/json")

    app = web.Application()
    app.router.add_get("/usgs/query", query)
    app.router.add_get("/tmdb/discover/movie", tmdb_discover)
    app.router.add_get("/tmdb/movie/{id}", tmdb_movie)
    return await aiohttp_server(app)


async def _count(store: Store, table: Any, *where: Any) -> int:
    async with store.session() as s:
        return int((await s.execute(select(func.count()).select_from(table).where(*where))).scalar_one())


async def test_one_bad_record_among_good_ones_leaves_every_good_one_stored(
    hostile: Any, replay: ReplayServer, store: Store, make_ctx: MakeCtx, fast_retries: None,
) -> None:
    settings = settings_for(replay, usgs={"base_url": str(hostile.make_url("/usgs")), "max_body_bytes": 200_000,
                                                 "breaker_failures": 100})
    ctx = make_ctx()
    poller = poller_for(settings, "usgs")
    report = await poller.run_cycle(ctx)
    assert report.completed, report
    assert report.inserted == 3
    async with store.session() as s:
        names = {e.external_id: e.name for e in (await s.execute(select(Entity))).scalars()}
        skips = await skip_counts(s, "usgs")
        cursor = await load_cursor(s, "usgs")
    assert set(names) == set(GOOD)
    assert "\ufffd lone surrogate" in names["good2"]  # replaced, not a crash, not lost
    # every bad one counted with its reason; the page is done: the cursor moved on
    assert skips[("usgs", "missing_field")] >= 1 and skips[("usgs", "bad_type")] >= 1
    assert skips[("usgs", "implausible_value")] == 2  # latitude 200, magnitude -999
    assert skips[("usgs", "body_too_large")] == 1
    assert skips[("usgs", "undecodable_body")] == 1  # nested 3000 deep
    assert skips[("usgs", "malformed")] >= 1  # iterating an int deep inside the parser (TypeError)
    assert cursor is not None and cursor.page == 0 and cursor.watermark is not None
    # nothing half-written
    assert await _count(store, Document) == 3 and await _count(store, Task, Task.stage == Stage.gate) == 3
    # a second cycle: the same, nothing duplicated
    again = await poller.run_cycle(ctx)
    assert again.completed and again.inserted == 0


async def test_an_echoed_key_never_reaches_the_store_or_the_log(
    hostile: Any, replay: ReplayServer, store: Store, make_ctx: MakeCtx, fast_retries: None,
) -> None:
    import io

    from clkt.logs import register_secrets, setup_logging

    register_secrets([KEY])
    buf = io.StringIO()
    setup_logging("DEBUG", stream=buf)  # the product's own log handler
    settings = settings_for(replay, tmdb={"base_url": str(hostile.make_url("/tmdb")), "breaker_failures": 100})
    ctx = make_ctx()
    poller = poller_for(settings, "tmdb")
    source = poller.build_source(ctx)
    source.client._key = KEY  # what TMDB_API_KEY would give
    report = await poller.run_cycle(ctx)
    assert report.completed and report.inserted == 1, report  # the good film, despite "TBA" and a missing id
    async with store.session() as s:
        rows = (await s.execute(select(SkipCount))).scalars().all()
    details = " ".join(r.last_detail or "" for r in rows)
    assert {r.reason for r in rows} >= {"undecodable_body", "missing_field"}
    assert "api_key=***" in details  # the echoed URL is there, its key is not
    assert KEY not in details
    assert "skipped a record (undecodable_body)" in buf.getvalue() and KEY not in buf.getvalue()


def test_redact_covers_keys_params_url_passwords_and_bearer_tokens() -> None:
    from clkt.logs import redact, register_secrets

    register_secrets(["verysecretvalue/+="])
    cases = {
        "GET https://x/y?api_key=abc123&page=2": "GET https://x/y?api_key=***&page=2",
        "postgresql+asyncpg://clkt:hunter2@db:5432/clkt": "postgresql+asyncpg://clkt:***@db:5432/clkt",
        "Authorization: Bearer eyJhbGciOi.abc.def": "Authorization: Bearer ***",
        "v=verysecretvalue%2F%2B%3D end": "v=*** end",
        "token%3Dzzz": "token%3D***",
        "the monkey=3 keys stay": "the monkey=3 keys stay",
    }
    for raw, want in cases.items():
        assert redact(raw) == want, raw


def test_a_traceback_is_redacted_in_the_log_line() -> None:
    import io
    import logging

    from clkt.logs import setup_logging

    buf = io.StringIO()
    setup_logging("INFO", stream=buf)
    try:
        raise RuntimeError("cannot connect to postgresql://u:topsecretpw@h/db")
    except RuntimeError:
        logging.getLogger("t").exception("boom with token=abcdef")
    out = buf.getvalue()
    assert "Traceback" in out and "topsecretpw" not in out and "abcdef" not in out
    assert "postgresql://u:***@h/db" in out


async def test_an_unexpected_error_in_a_cycle_never_ends_the_source(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from tests.conftest import wait_for

    settings = settings_for(replay)

    ctx = make_ctx()
    poller = poller_for(settings, "usgs")
    source = poller.build_source(ctx)
    real_poll = source.poll
    calls = []

    async def flaky(window: Any, page: int) -> Any:
        calls.append(page)
        if len(calls) == 1:
            raise ZeroDivisionError("a bug in a list parser")  # not a ClktError
        return await real_poll(window, page)

    monkeypatch.setattr(source, "poll", flaky)
    task = asyncio.create_task(poller.run(ctx))

    async def crawled() -> bool:
        return await _count(store, Entity, Entity.source == "usgs") == 4

    await wait_for(crawled, timeout=15)
    assert not task.done()  # the service is still running
    ctx.stopping.set()
    await asyncio.wait_for(task, timeout=5)
    assert len(calls) >= 2


async def test_a_list_page_that_never_decodes_is_skipped_after_some_cycles(
    aiohttp_server: Any, replay: ReplayServer, store: Store, make_ctx: MakeCtx, fast_retries: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def discover(request: web.Request) -> web.Response:
        if request.query.get("page") == "1":
            return web.Response(text="<html>maintenance</html>", content_type="text/html")
        page = {"page": 2, "total_pages": 2, "results": [{"id": 7, "title": "Seven", "release_date": "2026-02-20"}]}
        return web.Response(body=json.dumps(page).encode(), content_type="application/json")

    async def movie(request: web.Request) -> web.Response:
        d = data("tmdb/movie-details-550.json") | {"id": 7, "release_date": "2026-02-20"}
        d["credits"] = {k: v for k, v in data("tmdb/movie-credits-550.json").items() if k != "id"}
        return web.Response(body=json.dumps(d).encode(), content_type="application/json")

    app = web.Application()
    app.router.add_get("/tmdb/discover/movie", discover)
    app.router.add_get("/tmdb/movie/{id}", movie)
    server = await aiohttp_server(app)
    settings = settings_for(replay, tmdb={"base_url": str(server.make_url("/tmdb")), "breaker_failures": 100})
    ctx = make_ctx()
    poller = poller_for(settings, "tmdb")
    monkeypatch.setattr(poller, "FETCH_RETRY_CYCLES", 3)  # this poller only
    from clkt.errors import PayloadError

    for _ in range(2):  # the page is retried (cursor kept) for a while...
        with pytest.raises(PayloadError):
            await poller.run_cycle(ctx)
        async with store.session() as s:
            assert await load_cursor(s, "tmdb") is None
    report = await poller.run_cycle(ctx)  # ...then skipped, counted, and the next page is read
    assert report.completed and report.inserted == 1 and report.skipped == {"page_failed": 1}
    async with store.session() as s:
        skips = await skip_counts(s, "tmdb")
    assert skips[("tmdb", "page_failed")] == 1
