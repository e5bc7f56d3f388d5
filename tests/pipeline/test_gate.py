"""The temporal gate: the cutoff registry, the eligibility rule, and the gate stage worker."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select

from clkt.config import TargetSettings
from clkt.context import ServiceContext
from clkt.cutoff import cutoff_for, eligible, lookup_cutoff
from clkt.errors import ConfigError
from clkt.pipeline.flow import step_of
from clkt.pipeline.gate import GateWorker
from clkt.replay import ReplayServer
from storage.engine import Store
from storage.models import Entity, EntityStatus, LeaseStatus, Stage, Task
from storage.tasks import claim_tasks
from tests.sources.conftest import poller_for, settings_for


@pytest.mark.parametrize(
    ("model", "cutoff"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", date(2024, 9, 19)),
        ("meta-llama/Llama-3.1-8B", date(2023, 12, 31)),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", date(2023, 12, 31)),
        ("google/gemma-2-9b", date(2024, 6, 27)),
        ("google/gemma-3-270m", date(2024, 8, 31)),
        ("mistralai/Mistral-7B-v0.3", date(2024, 5, 22)),
        ("allenai/OLMo-2-1124-7B", date(2024, 11, 26)),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", date(2024, 11, 1)),
    ],
)
def test_registry(model: str, cutoff: date) -> None:
    hit = lookup_cutoff(model)
    assert hit is not None and hit.cutoff == cutoff
    assert cutoff_for(TargetSettings(name="t", model=model)) == cutoff


def test_config_overrides_and_unknown_models() -> None:
    assert cutoff_for(TargetSettings(name="t", model="google/gemma-3-1b", cutoff=date(2025, 1, 1))) == date(2025, 1, 1)
    assert cutoff_for(TargetSettings(name="t", model="/models/my-ft", family="qwen2.5")) == date(2024, 9, 19)
    with pytest.raises(ConfigError) as e:
        cutoff_for(TargetSettings(name="mystery", model="acme/unknown-7b"))
    assert "cutoff" in str(e.value)


def test_eligible_boundary() -> None:
    cutoff = date(2024, 8, 31)
    first = datetime(2025, 3, 2, tzinfo=UTC)  # cutoff + 183 days
    assert eligible(first, cutoff, 183)
    assert not eligible(first - timedelta(seconds=1), cutoff, 183)
    with pytest.raises(ValueError):
        eligible(datetime(2025, 3, 2), cutoff, 183)


async def test_gate_worker_passes_fresh_entities_and_names_the_model_otherwise(
    replay: ReplayServer, store: Store, make_ctx: Callable[..., ServiceContext]
) -> None:
    base = settings_for(replay)
    targets = [
        TargetSettings(name="old-model", model="meta-llama/Llama-3.1-8B"),
        TargetSettings(name="recent-model", model="x/y", cutoff=date(2025, 8, 20)),  # +183 days = 2026-02-19
    ]
    # no sampled observation of the rejected entities here (test_gate_samples_rejections_for_observing_probes)
    settings = base.model_copy(update={"spec": base.spec.model_copy(update={"targets": targets, "ineligible_probe_rate": 0.0})})
    ctx = make_ctx()
    await poller_for(settings, "usgs").run_cycle(ctx)
    worker = GateWorker(step=step_of(Stage.gate), daemon=settings.daemon, spec=settings.spec)
    async with store.transaction() as s:
        tasks = await claim_tasks(s, stage=Stage.gate, owner=ctx.owner, lease=timedelta(minutes=1), limit=10)
    assert len(tasks) == 4
    for t in tasks:
        await worker.process(t, ctx)
    async with store.session() as s:
        rows = (await s.execute(select(Entity).order_by(Entity.occurred_at))).scalars().all()
        probes = (await s.execute(select(Task).where(Task.stage == Stage.probe))).scalars().all()
        gates = (await s.execute(select(Task).where(Task.stage == Stage.gate))).scalars().all()
    verdicts = {r.external_id: (r.status, r.status_reason) for r in rows}
    fresh = [r for r in rows if r.occurred_at.date() >= date(2026, 2, 19)]
    stale = [r for r in rows if r.occurred_at.date() < date(2026, 2, 19)]
    assert fresh and stale, verdicts
    for r in fresh:
        assert r.status == EntityStatus.probing
    for r in stale:
        assert r.status == EntityStatus.ineligible and "recent-model" in (r.status_reason or "")
    assert sorted(p.entity_id for p in probes) == sorted(r.id for r in fresh)
    assert all(p.key == "" for p in probes)
    assert all(g.status == LeaseStatus.done for g in gates)


def test_gate_worker_refuses_an_unknown_cutoff(replay: ReplayServer) -> None:
    base = settings_for(replay)
    spec = base.spec.model_copy(update={"targets": [TargetSettings(name="m", model="acme/unknown")]})
    with pytest.raises(ConfigError):
        GateWorker(step=step_of(Stage.gate), daemon=base.daemon, spec=spec)
