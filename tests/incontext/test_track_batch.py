"""The in-context track in batch mode (`[agents] mode = "batch"`): an API target's calls go through the fake OpenAI
Batch API (files + batches on loopback) at the batch price, and a restart finds the submitted batch again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clkt.config import AgentSettings, GpuSettings, SpecSettings, TargetSettings
from clkt.errors import ConfigError
from clkt.incontext import ApiAsker, InContextTrack
from clkt.incontext.runner import run_incontext
from clkt.snapshots.layout import SnapshotData
from clkt.targets.api import ApiTargets
from storage.engine import Store
from storage.incontext import incontext_answers
from storage.llm_batches import SqlBatchStore
from storage.llm_cache import SqlCallCache
from tests.fakes.batch_server import FakeBatchProvider
from tests.incontext._helpers import api_target, fake_agents, no_secrets, tiny
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot

PROMPTS = 12  # the tiny snapshot's: 2 questions x 2 languages x (no document, en, fr)
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}


def batch_agents(p: FakeBatchProvider, **kw: object) -> AgentSettings:
    return AgentSettings.model_validate({
        "mode": "batch", "providers": {"openai": {"base_url": p.openai_url}},
        "prices": {"openai:tiny-chat": PRICE},
        "batch": {"flush_after_s": 0, "poll_interval_s": 0.01}, **kw,
    })


def target() -> TargetSettings:
    return api_target().model_copy(update={"model": "openai:tiny-chat"})


def batch_track(store: Store, snap: SnapshotData, agents: AgentSettings) -> tuple[InContextTrack, ApiTargets]:
    api = ApiTargets.build(agents=agents, secret=no_secrets, cache=SqlCallCache(store),
                           batch_store=SqlBatchStore(store))
    asker = ApiAsker(api=api, target=target(), max_new_tokens=8, concurrency=4, batch=True)
    track = InContextTrack(store=store, snapshot=snap, target="api-t", asker=asker, context_langs=["en", "fr"],
                           max_new_tokens=8)
    return track, api


async def test_the_track_goes_through_one_batch_at_the_batch_price(store: Store, tmp_path: Path) -> None:
    snap = tiny(tmp_path)
    async with FakeBatchProvider() as p:
        p.text_reply = lambda prompt: "B"
        agents = batch_agents(p)
        track, api = batch_track(store, snap, agents)
        first = await track.run()
        assert (first.pending, first.asked, p.stats.batches_created) == (PROMPTS, 0, 0)  # queued, nothing sent yet
        await api.tick_batches()  # one batch of every prompt
        await api.tick_batches()  # polled: ended, results stored
        done = await track.run()
        assert (done.pending, done.asked, done.failed) == (0, PROMPTS, 0)
        assert p.stats.batches_created == 1 and len(p.stats.runs) == PROMPTS and p.stats.resubmitted == 0
        again = await track.run()
        assert again.asked == 0 and again.already == PROMPTS and p.stats.batches_created == 1
    async with store.session() as s:
        rows = await incontext_answers(s, snap.manifest.snapshot_id)
    assert len(rows) == PROMPTS and {r.letter for r in rows} == {"B"}
    for r in rows:  # the batch price: half the configured online price of the provider's usage
        online = (r.input_tokens * PRICE["input_per_mtok"] + r.output_tokens * PRICE["output_per_mtok"]) / 1e6
        assert r.cost_usd == pytest.approx(online / 2) and r.cost_usd > 0


async def test_a_restart_finds_the_submitted_batch_and_pays_nothing_twice(store: Store, tmp_path: Path) -> None:
    snap = tiny(tmp_path)
    async with FakeBatchProvider(polls_to_end=2) as p:
        agents = batch_agents(p)
        track, api = batch_track(store, snap, agents)
        await track.run()
        await api.tick_batches()  # submitted, then the process dies (every object dropped)
        assert p.stats.batches_created == 1
        track, api = batch_track(store, snap, agents)
        assert (await track.run()).pending == PROMPTS  # waiting in the stored batch: nothing queued again
        for _ in range(3):  # polled until it ends (the poll interval apart)
            await api.tick_batches()
            await asyncio.sleep(0.02)
        done = await track.run()
        assert done.asked == PROMPTS and done.pending == 0
    assert p.stats.batches_created == 1 and p.stats.resubmitted == 0 and max(p.stats.runs.values()) == 1


async def test_the_runner_waits_for_the_batches(store: Store, tmp_path: Path) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    spec = SpecSettings(targets=[target()], languages=["en", "fr"])
    async with FakeBatchProvider() as p:
        [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=batch_agents(p),
                                    gpu=GpuSettings(max_new_tokens=8), data_dir=tmp_path, secret=no_secrets)
    assert run.error is None and run.counts.asked == PROMPTS and run.counts.pending == 0
    assert p.stats.batches_created == 1


async def test_batch_mode_refuses_a_provider_without_a_batch_api_at_start(store: Store, tmp_path: Path) -> None:
    agents = fake_agents("http://127.0.0.1:9/v1").model_copy(update={"mode": "batch"})
    spec = SpecSettings(targets=[api_target()], languages=["en", "fr"])
    with pytest.raises(ConfigError, match=r"no batch API.*stage_modes\.incontext"):
        await run_incontext(store=store, snapshot_id="none", spec=spec, agents=agents, gpu=GpuSettings(),
                            data_dir=tmp_path, secret=no_secrets)
    online = agents.model_copy(update={"stage_modes": {"incontext": "online"}})
    assert not online.incontext_batched() and online.mode_of("judge") == "batch"


async def test_the_service_reads_the_batches_in_over_its_rounds(store: Store, tmp_path: Path) -> None:
    """The daemon's service (template agents: a dispatcher of its own) queues, ticks, and completes a later round."""
    import aiohttp

    from clkt.config import DaemonSettings
    from clkt.context import ServiceContext
    from clkt.incontext.service import InContextService
    from clkt.telemetry import Metrics

    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    spec = SpecSettings(name="tiny", targets=[target()], languages=["en", "fr"])
    async with FakeBatchProvider() as p, aiohttp.ClientSession() as http:
        service = InContextService(spec=spec, agents=batch_agents(p), gpu=GpuSettings(max_new_tokens=8),
                                   daemon=DaemonSettings(), data_dir=tmp_path, secret=no_secrets, burst=True)
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
        assert await service.run_due(ctx) == []  # queued and submitted: pending, not failed (no backoff)
        assert p.stats.batches_created == 1 and not service._retry_at
        rounds = 0
        while not (done := await service.run_due(ctx)) and rounds < 5:
            rounds += 1
            await asyncio.sleep(0.02)
        assert done == [SNAPSHOT_ID] and p.stats.batches_created == 1 and p.stats.resubmitted == 0
    assert (tmp_path / "reports" / SNAPSHOT_ID / "report.md").exists()
