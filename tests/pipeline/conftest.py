"""Pipeline tests: no real model is ever reached; stage workers poll fast."""

from __future__ import annotations

import pydantic_ai.models
import pytest

from clkt.pipeline.stage_worker import StageWorker

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


@pytest.fixture(autouse=True)
def _fast_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StageWorker, "IDLE_SLEEP_S", 0.02)
    monkeypatch.setattr(StageWorker, "RETRY_BASE_S", 0.01)
