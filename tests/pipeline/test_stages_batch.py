"""The four stages end to end in batch mode: the stage workers and the `llm-batches` service on a real SQLite
store against the fake OpenAI Batch API; then the same against Anthropic Message Batches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests
from sqlalchemy import func, select

from agents.batch import BatchedModel
from clkt.pipeline.batches import BatchService
from clkt.pipeline.stage_worker import StageWorker
from clkt.services import agent_backend
from storage.engine import Store
from storage.llm_cache import cost_summary
from storage.models import EntityStatus, LlmBatch, LlmCall
from tests.documents.samples import LIVERPOOL_SWANSEA, NORTHRIDGE
from tests.fakes.batch_server import FakeBatchProvider
from tests.pipeline._harness import add_entity, answers, pipeline_settings, running, settle


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(BatchedModel, "POLL_DEFER_S", 0.05)
    monkeypatch.setattr(BatchService, "TICK_S", 0.05)
    monkeypatch.setattr(StageWorker, "IDLE_SLEEP_S", 0.05)
    with override_allow_model_requests(True):  # only the fake server on 127.0.0.1 is ever reached
        yield


def agents(kind: str, url: str) -> dict[str, Any]:
    return {
        "backend": "llm", "mode": "batch", "stage_modes": {"judge": "batch"},
        "judge_model": f"{kind}:judge-m", "generator_model": f"{kind}:gen-m", "verifier_model": f"{kind}:ver-m",
        "translator_model": f"{kind}:tr-m", "questions_per_entity": 2,
        "providers": {kind: {"base_url": url}},
        "prices": {f"{kind}:{m}": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}
                   for m in ("judge-m", "gen-m", "ver-m", "tr-m")},
        "batch": {"flush_after_s": 0.1, "poll_interval_s": 0.05},
    }


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_entities_become_ready_through_provider_batches(store: Store, tmp_path: Path, kind: str) -> None:
    async with FakeBatchProvider() as provider:
        url = provider.openai_url if kind == "openai" else provider.anthropic_url
        settings = pipeline_settings(tmp_path, agents=agents(kind, url))
        backend = agent_backend(settings, store=store)
        await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
        await add_entity(store, NORTHRIDGE, "M 6.7 - Northridge", domain="disasters", external_id="q1")
        async with running(settings, store, backend, answers()) as ctx:
            service = asyncio.create_task(BatchService().run(ctx), name="llm-batches")
            try:
                final = await settle(store, 2, timeout=120)
            finally:
                ctx.stopping.set()
                await service
    assert set(final.values()) == {EntityStatus.ready}
    assert provider.stats.resubmitted == 0 and max(provider.stats.submissions.values()) == 1
    async with store.session() as s:
        calls = int((await s.execute(select(func.count()).select_from(LlmCall))).scalar() or 0)
        batch_calls = int((await s.execute(select(func.count()).where(LlmCall.batch.is_(True)))).scalar() or 0)
        open_batches = int((await s.execute(select(func.count()).where(LlmBatch.state != "ended"))).scalar() or 0)
        summary = await cost_summary(s)
    assert calls == batch_calls == sum(provider.stats.runs.values())  # every paid answer came from a batch
    assert open_batches == 0 and summary.accepted_questions > 0
    assert all(st.batch_share == 1.0 for st in summary.stages)


def test_the_batch_service_runs_only_when_a_stage_is_in_batch_mode(tmp_path: Path) -> None:
    from clkt.pipeline.stages import stage_services
    from clkt.services import stage_config

    url = "http://127.0.0.1:9/v1"
    batch = pipeline_settings(tmp_path, agents=agents("openai", url))
    online = pipeline_settings(tmp_path, agents={**agents("openai", url), "mode": "online", "stage_modes": {}})
    one_stage = pipeline_settings(tmp_path, agents={**agents("openai", url), "mode": "online",
                                                    "stage_modes": {"translate": "batch"}})
    assert "llm-batches" in [s.name for s in stage_services(stage_config(batch))]
    assert "llm-batches" not in [s.name for s in stage_services(stage_config(online))]
    assert "llm-batches" in [s.name for s in stage_services(stage_config(one_stage))]
    assert one_stage.agents.mode_of("translate") == "batch" and one_stage.agents.mode_of("judge") == "online"


def test_an_unknown_stage_or_mode_is_a_clear_config_error(tmp_path: Path) -> None:
    from pydantic import ValidationError

    url = "http://127.0.0.1:9/v1"
    with pytest.raises(ValidationError, match="stage_modes"):
        pipeline_settings(tmp_path, agents={**agents("openai", url), "stage_modes": {"probe": "batch"}})
    with pytest.raises(ValidationError, match="mode"):
        pipeline_settings(tmp_path, agents={**agents("openai", url), "mode": "cheap"})
