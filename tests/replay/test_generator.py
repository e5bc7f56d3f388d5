"""The replay server's generator mode: a deterministic stream of fictional entities, in each API's payload shape
(parsed by the real sources, questioned by the template engine), never the same entity twice, dated by the
process's clock, paged and filtered by date like the real APIs, so the pollers work unchanged; bounded memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agents.template.backend import TemplateBackend
from clkt import clock
from clkt.config import ReplaySettings, load_settings
from clkt.context import ServiceContext
from clkt.documents import render_document
from clkt.errors import ConfigError
from clkt.facts import EntityRecord, FilmFacts, QuakeFacts, ReleaseFacts
from clkt.replay import ReplayServer
from clkt.replay.stream import SOURCES, EntityStream
from clkt.sources.base import Source, Window
from clkt.sources.board import SourceBoard
from clkt.sources.http import SourceClient
from clkt.sources.poller import SourcePoller
from clkt.sources.registry import SOURCE_TYPES
from clkt.telemetry import Metrics
from storage.engine import Store

START = datetime(2026, 1, 1, tzinfo=UTC)


def at(t: datetime) -> None:
    """Make `t` the process's now (the autouse fixture puts the real clock back)."""
    clock.install(clock.SimulatedClock(start=t, speed=1.0))


def gen_settings(**kw: object) -> ReplaySettings:
    return ReplaySettings(enabled=True, mode="generator", seed=11, entities_per_week=7.0, generator_start=START, **kw)


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    async with ReplayServer(settings=gen_settings()) as s:
        yield s


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def source(name: str, server: ReplayServer, http: aiohttp.ClientSession) -> Source[Any]:
    base = load_settings(None, environ={}).sources[name]
    upd: dict[str, object] = {"base_url": server.base_url(name), "rate_per_s": 1000.0, "burst": 50}
    if name == "thesportsdb":
        upd["options"] = base.options.model_copy(update={"leagues": ["4328", "4424", "4387"]})
    s = base.model_copy(update=upd)
    return SOURCE_TYPES[name](client=SourceClient(name=name, settings=s, session=http), settings=s)


async def crawl(src: Source[Any], window: Window) -> list[EntityRecord]:
    refs, page = [], 1
    while True:
        p = await src.poll(window, page)
        assert p.skipped == ()
        refs.extend(p.refs)
        if p.next_page is None:
            break
        page = p.next_page
    return [await src.fetch(r) for r in refs]


def test_the_stream_is_deterministic_and_never_repeats_an_entity() -> None:
    a, b = EntityStream(seed=3, entities_per_week=5.0), EntityStream(seed=3, entities_per_week=5.0)
    other = EntityStream(seed=4, entities_per_week=5.0)
    for src in SOURCES:
        ids = [a.external_id(src, i) for i in range(2000)]
        assert len(set(ids)) == len(ids)
        assert [a.index_of(src, x) for x in ids[:50]] == list(range(50))
        assert other.index_of(src, ids[7]) is None and a.index_of(src, "nonsense") is None
        assert set(ids).isdisjoint(other.external_id(src, i) for i in range(2000))
        assert a.entity(src, 42) == b.entity(src, 42)
        times = [a.occurred(src, i) for i in range(500)]
        assert times == sorted(times) and len(set(times)) == len(times)  # rising, no two at once
        assert all(timedelta(0) <= a.published(src, i) - a.occurred(src, i) < timedelta(days=1) for i in range(500))
    names = {a.entity("tmdb", i).name for i in range(300)}
    assert len(names) > 250  # invented titles, seldom alike


def test_the_rate_is_entities_per_source_per_week() -> None:
    s = EntityStream(seed=1, entities_per_week=10.0, start=START)
    now = START + timedelta(weeks=20)
    for src in SOURCES:
        n = s.count_between(src, START, now, now=now)
        assert 199 <= n <= 200
        assert n == len(list(s.occurred_between(src, START, now, now=now)))


def test_memory_stays_bounded_however_far_the_stream_runs() -> None:
    s = EntityStream(seed=1, entities_per_week=1000.0, start=START)
    for i in range(2100):  # more than the LRU holds
        s.entity("usgs", i)
    assert s._draw.cache_info().currsize <= 2048
    assert s.count_between("usgs", START, START + timedelta(days=3650), now=START + timedelta(days=3650)) > 500_000


@pytest.mark.parametrize("name", sorted(SOURCE_TYPES))
async def test_each_source_parses_the_generated_payloads_and_the_engine_questions_them(
    name: str, server: ReplayServer, http: aiohttp.ClientSession
) -> None:
    at(START + timedelta(days=21))
    window = Window(start=START + timedelta(days=15), end=START + timedelta(days=20))  # in GDACS's feed of 7 days
    records = await crawl(source(name, server, http), window)
    assert records, f"{name}: nothing in 5 days at 7 a week"
    assert len({r.external_id for r in records}) == len(records)
    engine = TemplateBackend()
    for r in records:
        assert r.source == name and r.facts.kind == {"tmdb": "film", "musicbrainz": "release", "deezer": "release",
                                                     "thesportsdb": "match", "usgs": "quake", "gdacs": "disaster",
                                                     "arxiv": "paper", "launchlibrary": "launch"}[name]
        assert window.start - timedelta(days=1) <= r.occurred_at < window.end, (name, r.occurred_at)
        doc = render_document(r.facts, "en")
        assert await engine.generate(entity_name=r.name, document=doc, facts=r.facts, n=1)


async def test_nothing_is_listed_before_it_is_published(server: ReplayServer, http: aiohttp.ClientSession) -> None:
    now = START + timedelta(days=10, hours=5)
    at(now)
    window = Window(start=START, end=now + timedelta(days=30))  # a window reaching into the future
    src = source("usgs", server, http)
    seen = await crawl(src, window)
    assert seen and max(r.occurred_at for r in seen) <= now
    later = now + timedelta(days=3)
    at(later)
    more = await crawl(src, window)
    assert {r.external_id for r in seen} < {r.external_id for r in more}
    # a future entity's detail is not found yet
    stream = server.generator.stream if server.generator else None
    assert stream is not None
    future = stream.last_before("usgs", later + timedelta(days=2))
    async with http.get(server.base_url("usgs") + f"/query?format=geojson&eventid={stream.external_id('usgs', future)}") as r:
        assert r.status == 404


async def test_nothing_occurred_before_the_streams_start(server: ReplayServer, http: aiohttp.ClientSession) -> None:
    at(START + timedelta(days=3))
    records = await crawl(source("musicbrainz", server, http), Window(start=START - timedelta(days=60), end=clock.now()))
    assert records and min(r.occurred_at for r in records) >= START


async def test_pages_and_counts_follow_the_real_apis(server: ReplayServer, http: aiohttp.ClientSession) -> None:
    at(START + timedelta(days=200))
    base = server.base_url("musicbrainz")
    q = "release?query=date:[2026-01-01 TO 2026-06-30]&fmt=json&limit=100"
    async with http.get(f"{base}/{q}&offset=0") as r:
        first = await r.json()
    async with http.get(f"{base}/{q}&offset=100") as r:
        second = await r.json()
    assert first["count"] == second["count"] > 150
    ids = [x["id"] for x in first["releases"] + second["releases"]]
    assert len(ids) == len(set(ids)) == min(200, first["count"])
    assert [x["date"] for x in first["releases"]] == sorted(x["date"] for x in first["releases"])
    async with http.get(server.base_url("deezer") + "/editorial/0/releases?index=0&limit=5") as r:
        newest = await r.json()
    days = [x["release_date"] for x in newest["data"]]
    assert days == sorted(days, reverse=True) and "next" in newest
    async with http.get(server.base_url("tmdb") + "/discover/movie?page=0") as r:
        assert r.status == 422


async def test_a_poller_crawls_the_living_upstream_with_its_cursor(
    server: ReplayServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    base = load_settings(None, environ={})
    src = base.sources.usgs.model_copy(update={"base_url": server.base_url("usgs"), "rate_per_s": 1000.0, "burst": 50,
                                               "lookback_days": 7})
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'g.db'}") as store:
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
        poller = SourcePoller(source_name="usgs", settings=src, daemon=base.daemon, board=SourceBoard())
        totals = []
        for day in (7, 9, 12, 20):
            at(START + timedelta(days=day))
            totals.append((await poller.run_cycle(ctx)).inserted)
    stream = server.generator.stream if server.generator else None
    assert stream is not None
    end = START + timedelta(days=20)
    quakes = [stream.entity("usgs", i).facts for i in stream.occurred_between("usgs", START, end, now=end)]
    expected = [f for f in quakes if isinstance(f, QuakeFacts) and f.magnitude >= src.options.min_magnitude]
    assert sum(totals) == len(expected) and all(n > 0 for n in totals)  # every new one, none twice, none missed


@pytest.mark.parametrize(("line", "key"), [
    ('mode = "living"', "replay.mode"),
    ("entities_per_week = 0", "replay.entities_per_week"),
    ("entities_per_week = 1e6", "replay.entities_per_week"),
    ("entities_per_week = nan", "replay.entities_per_week"),
    ("seed = -1", "replay.seed"),
    ("generator_start = 2026-01-01T00:00:00", "replay.generator_start"),
])
def test_generator_settings_are_bounded(line: str, key: str, tmp_path: Path) -> None:
    path = tmp_path / "clkt.toml"
    path.write_text(f"[replay]\n{line}\n")
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_settings(path, environ={})


def test_a_generated_day_stays_on_its_day() -> None:
    s = EntityStream(seed=5, entities_per_week=20.0, start=START)
    for src in ("tmdb", "musicbrainz", "deezer"):
        for i in range(s.first_at_or_after(src, START), s.first_at_or_after(src, START) + 50):
            f = s.entity(src, i).facts
            assert isinstance(f, FilmFacts | ReleaseFacts) and f.release_date == s.occurred(src, i).date()
