"""Pipeline tests: no real model is ever reached; stage workers poll fast. The gate's tests crawl the replay
server first, with the crawler's fixtures (`tests/sources/conftest.py`: `replay`, `make_ctx` and its `http`)."""

from __future__ import annotations

import pydantic_ai.models
import pytest

from clkt.pipeline.stage_worker import StageWorker
from tests.sources.conftest import http, make_ctx, replay  # noqa: F401 - shared with the crawler's tests

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


@pytest.fixture(autouse=True)
def _fast_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StageWorker, "IDLE_SLEEP_S", 0.05)
    monkeypatch.setattr(StageWorker, "RETRY_BASE_S", 0.01)
