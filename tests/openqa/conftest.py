from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from pydantic_ai.models import override_allow_model_requests

from agents.limits import RateLimitedModel
from clkt.context import ServiceContext
from clkt.telemetry import Metrics
from storage.engine import Store
from tests.fakes.openai_server import FakeOpenAI
from tests.targets.conftest import models_data_dir  # noqa: F401  (shared fixture)


@pytest.fixture
async def servers(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[FakeOpenAI]]:
    """Three fake OpenAI-compatible servers, one per judge of `tests.openqa._jury` (short backoffs; model requests
    allowed: only these servers on 127.0.0.1 are ever reached)."""
    monkeypatch.setattr(RateLimitedModel, "BACKOFF_INITIAL_S", 0.01)
    monkeypatch.setattr(RateLimitedModel, "BACKOFF_MAX_S", 0.02)
    out = [FakeOpenAI(), FakeOpenAI(), FakeOpenAI()]
    with override_allow_model_requests(True):
        for s in out:
            await s.start()
        yield out
        for s in out:
            await s.stop()


@pytest.fixture
async def ctx(store: Store) -> AsyncIterator[ServiceContext]:
    async with aiohttp.ClientSession() as http:
        yield ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
