"""The poller against the replay server and a real SQLite store: a full crawl of every source, cursors
that resume after a restart with no gap and no re-crawl, updates that never duplicate, counted skips,
drift that never crashes, blocks that do not advance the cursor, and a prompt stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from sqlalchemy import func, select

from clkt.config import Settings
from clkt.context import ServiceContext
from clkt.errors import SourceBlocked, SourceError
from clkt.replay import FaultKind, FaultPlan, FaultRule, ReplayServer
from clkt.sources.base import PollPage, Window
from clkt.sources.poller import SourcePoller
from storage.engine import Store
from storage.entities import entity_by_key, load_cursor, skip_counts
from storage.models import Document, Entity, EntityStatus, LeaseStatus, Stage, Task

from .conftest import poller_for, settings_for

MakeCtx = Callable[..., ServiceContext]


async def count(store: Store, table: Any, *where: Any) -> int:
    async with store.session() as s:
        return int((await s.execute(select(func.count()).select_from(table).where(*where))).scalar_one())


async def route_count(server: ReplayServer, http: aiohttp.ClientSession, route: str) -> int:
    async with http.get(f"{server.url}/_control/stats") as r:
        return (await r.json())["routes"].get(route, {}).get("count", 0)


async def set_faults(server: ReplayServer, http: aiohttp.ClientSession, *rules: FaultRule) -> None:
    async with http.post(f"{server.url}/_control/faults", json=FaultPlan(rules=list(rules)).model_dump(mode="json")) as r:
        assert r.status == 200


def sports(server: ReplayServer) -> Settings:
    return settings_for(server, thesportsdb={"options": {"leagues": ["4328", "4424"]}})


async def test_full_crawl_of_every_source(replay: ReplayServer, store: Store, make_ctx: MakeCtx) -> None:
    settings = sports(replay)
    ctx = make_ctx()
    expected = {"tmdb": 1, "musicbrainz": 1, "deezer": 1, "thesportsdb": 2, "usgs": 4, "gdacs": 0}
    for name, n in expected.items():
        report = await poller_for(settings, name).run_cycle(ctx)
        assert report.completed and report.inserted == n, (name, report)
    assert await count(store, Entity) == 9
    assert await count(store, Document, Document.lang == "en", Document.origin == "source") == 9
    assert await count(store, Task, Task.stage == Stage.gate, Task.status == LeaseStatus.pending) == 9
    async with store.session() as s:
        skips = await skip_counts(s)
        fight_club = await entity_by_key(s, "tmdb", "550")
        cursor = await load_cursor(s, "usgs")
    assert skips[("tmdb", "not_found")] == 19 and skips[("gdacs", "covered_by_other_source")] == 2
    assert skips[("musicbrainz", "not_found")] == 1
    assert fight_club is not None and fight_club.redated_from is not None
    assert fight_club.redated_from.year == 1999 and fight_club.occurred_at.year == 2026
    assert fight_club.facts["directors"] == ["David Fincher"]
    assert cursor is not None and cursor.page == 0 and cursor.watermark == ctx.clock()
    # a second cycle re-reads the overlap window: nothing changes, nothing is duplicated
    for name in expected:
        report = await poller_for(settings, name).run_cycle(ctx)
        assert report.inserted == 0 and report.updated == 0, (name, report)
    assert await count(store, Entity) == 9


async def test_restart_resumes_from_the_cursor_without_gap_or_recrawl(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(replay, deezer={"options": {"page_size": 3}})
    first_ctx = make_ctx()
    poller = poller_for(settings, "deezer")
    source = poller.build_source(first_ctx)
    real_poll = source.poll
    pages_seen: list[int] = []

    async def crash_after_two(window: Window, page: int) -> PollPage:
        got = await real_poll(window, page)
        pages_seen.append(page)
        if len(pages_seen) == 2:
            first_ctx.stopping.set()  # the daemon goes down after the 2nd page
        return got

    monkeypatch.setattr(source, "poll", crash_after_two)
    first = await poller.run_cycle(first_ctx)
    assert not first.completed and first.pages == 2
    async with store.session() as s:
        cur = await load_cursor(s, "deezer")
    assert cur is not None and cur.page == 3 and cur.watermark is None
    # a new process: a new poller and context
    second = await poller_for(settings, "deezer").run_cycle(make_ctx())
    assert second.completed and second.pages == 2  # pages 3 and 4 only
    assert await route_count(replay, http, "/deezer/editorial/{id}/releases") == 4  # no page read twice
    assert await route_count(replay, http, "/deezer/album/{id}") == 11  # every album once: no gap, no re-crawl
    assert await count(store, Entity, Entity.source == "deezer") == 1
    async with store.session() as s:
        cur = await load_cursor(s, "deezer")
    assert cur is not None and cur.page == 0 and cur.watermark is not None


async def test_updates_never_duplicate(replay: ReplayServer, store: Store, make_ctx: MakeCtx) -> None:
    settings = sports(replay)
    ctx = make_ctx()
    poller = poller_for(settings, "thesportsdb")
    source = poller.build_source(ctx)
    await poller.run_cycle(ctx)
    async with store.session() as s:
        before = await entity_by_key(s, "thesportsdb", "441613")
    assert before is not None
    from clkt.sources.base import SourceRef

    record = await source.fetch(SourceRef(external_id="441613"))
    from clkt.sources.poller import CycleReport

    report = CycleReport()
    await poller._ingest(ctx, record, report)  # same payload: no write
    assert report.unchanged == 1
    edited = dict(record.payload, intSpectators="50000")
    changed = record.model_copy(update={"payload": edited, "facts": record.facts.model_copy(update={"spectators": 50000})})
    await poller._ingest(ctx, changed, report)
    assert report.updated == 1
    assert await count(store, Entity, Entity.source == "thesportsdb", Entity.external_id == "441613") == 1
    async with store.session() as s:
        after = await entity_by_key(s, "thesportsdb", "441613")
        docs = (await s.execute(select(Document).where(Document.entity_id == before.id))).scalars().all()
    assert after is not None and after.id == before.id and after.content_hash != before.content_hash
    assert after.facts["spectators"] == 50000
    assert len(docs) == 1 and "50,000" in docs[0].text
    assert await count(store, Task, Task.entity_id == before.id) == 1


async def test_drift_and_garbage_never_crash_the_poller(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, http: aiohttp.ClientSession, fast_retries: None
) -> None:
    await set_faults(
        replay, http,
        FaultRule(kind=FaultKind.drift, route="/usgs/query", rate=0.7),
        FaultRule(kind=FaultKind.drift, route="/thesportsdb/*/lookupevent.php"),
    )
    settings = sports(replay)
    ctx = make_ctx()
    for name in ("usgs", "thesportsdb"):
        report = await poller_for(settings, name).run_cycle(ctx)
        assert report.completed
    async with store.session() as s:
        skips = await skip_counts(s)
    assert sum(skips.values()) >= 1
    # nothing half-written: every entity has its document and its gate task
    n = await count(store, Entity)
    assert await count(store, Document) == n and await count(store, Task, Task.stage == Stage.gate) == n


async def test_a_blocked_source_does_not_move_its_cursor(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, http: aiohttp.ClientSession
) -> None:
    await set_faults(replay, http, FaultRule(kind=FaultKind.rate_limit, route="/usgs/*", retry_after_s=600))
    settings = settings_for(replay)
    ctx = make_ctx()
    with pytest.raises(SourceBlocked):
        await poller_for(settings, "usgs").run_cycle(ctx)
    async with store.session() as s:
        assert await load_cursor(s, "usgs") is None
    assert await count(store, Entity) == 0


async def test_run_loop_crawls_and_stops_promptly(replay: ReplayServer, store: Store, make_ctx: MakeCtx) -> None:
    settings = settings_for(replay)
    ctx = make_ctx()
    poller = poller_for(settings, "usgs")
    task = asyncio.create_task(poller.run(ctx))
    from tests.conftest import wait_for

    async def crawled() -> bool:
        return await count(store, Entity, Entity.source == "usgs") == 4

    await wait_for(crawled, timeout=10)
    ctx.stopping.set()
    await asyncio.wait_for(task, timeout=2)
    async with store.session() as s:
        e = (await s.execute(select(Entity).where(Entity.source == "usgs"))).scalars().first()
    assert e is not None and e.status == EntityStatus.discovered


async def _cycle_until_complete(poller: SourcePoller, ctx: ServiceContext, tries: int = 6) -> Any:
    """Run cycles until one completes; a cycle that ends at a transiently failing page raises SourceError."""
    for _ in range(tries):
        try:
            report = await poller.run_cycle(ctx)
        except SourceError:
            continue
        if report.completed:
            return report
    raise AssertionError(f"no cycle completed in {tries} tries")


async def test_a_record_that_keeps_failing_is_skipped_not_fatal(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, http: aiohttp.ClientSession, fast_retries: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await set_faults(replay, http, FaultRule(kind=FaultKind.server_error, route="/thesportsdb/*/lookupevent.php"))
    settings = settings_for(replay, thesportsdb={"options": {"leagues": ["4328", "4424"]}, "breaker_failures": 100})
    ctx = make_ctx()
    poller = poller_for(settings, "thesportsdb")
    monkeypatch.setattr(poller, "FETCH_RETRY_CYCLES", 2)  # this poller only
    # the first cycles end at the failing page (retried later, cursor not past it); then the records are skipped
    await _cycle_until_complete(poller, ctx)
    async with store.session() as s:
        assert (await skip_counts(s))[("thesportsdb", "fetch_failed")] == 2


async def test_a_transient_record_failure_is_retried_next_cycle_not_skipped(
    replay: ReplayServer, store: Store, make_ctx: MakeCtx, http: aiohttp.ClientSession, fast_retries: None
) -> None:
    # the detail route fails for a while (more than the client's retries), then recovers
    await set_faults(replay, http, FaultRule(kind=FaultKind.server_error, route="/thesportsdb/*/lookupevent.php", limit=6))
    settings = settings_for(replay, thesportsdb={"options": {"leagues": ["4328", "4424"]}, "breaker_failures": 100})
    ctx = make_ctx()
    poller = poller_for(settings, "thesportsdb")
    await _cycle_until_complete(poller, ctx)
    async with store.session() as s:
        assert ("thesportsdb", "fetch_failed") not in await skip_counts(s)
        n = (await s.execute(select(func.count()).select_from(Entity).where(Entity.source == "thesportsdb"))).scalar()
    assert n == 2
