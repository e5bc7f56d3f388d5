"""Fixtures for the crawler tests: a re-dated replay server, settings pointing at it, a service context."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime
from typing import Any

import aiohttp
import pytest

from clkt.config import ReplaySettings, Settings, SourcesSettings, load_settings
from clkt.context import ServiceContext
from clkt.replay import ReplayServer
from clkt.sources.board import SourceBoard
from clkt.sources.poller import SourcePoller
from clkt.telemetry import Metrics
from storage.engine import Store

REDATE_END = date(2026, 3, 1)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FAST = {"rate_per_s": 1000.0, "burst": 50, "concurrency": 4, "timeout_s": 2.0, "lookback_days": 30,
        "breaker_failures": 3, "breaker_reset_s": 0.5}


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    from clkt.sources.http import SourceClient

    monkeypatch.setattr(SourceClient, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(SourceClient, "BACKOFF_MAX_S", 0.05)


@pytest.fixture
async def replay() -> AsyncIterator[ReplayServer]:
    settings = ReplaySettings(enabled=True, redate=True, redate_end=REDATE_END, redate_days=28)
    async with ReplayServer(settings=settings) as server:
        yield server


def settings_for(server: ReplayServer, **per_source: dict[str, Any]) -> Settings:
    """The embedded settings with every source at the replay server, fast, plus per-source overrides."""
    base = load_settings(None, environ={})
    sources = {}
    for name, src in base.sources.items():
        upd = {"base_url": server.base_url(name), **FAST, **per_source.get(name, {})}
        sources[name] = type(src).model_validate({**src.model_dump(), **upd})
    return base.model_copy(update={"sources": SourcesSettings.model_validate(sources)})


def poller_for(settings: Settings, name: str, *, board: SourceBoard | None = None) -> SourcePoller:
    """The poller of source `name` as the daemon wires it (its section, the daemon section, a board, its key)."""
    src = settings.sources[name]
    return SourcePoller(source_name=name, settings=src, daemon=settings.daemon, board=board or SourceBoard(),
                        api_key=settings.secret(src.api_key_env))


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def make_ctx(store: Store, http: aiohttp.ClientSession) -> Callable[..., ServiceContext]:
    def make(*, now: datetime = NOW) -> ServiceContext:
        return ServiceContext(store=store, http=http, owner="test:1:x", metrics=Metrics(), clock=lambda: now)

    return make
