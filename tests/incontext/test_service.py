"""The daemon's `incontext` service: the API targets' track on each frozen snapshot, then its report."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from clkt.config import DaemonSettings, GpuSettings, SpecSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.incontext.service import InContextService
from clkt.telemetry import Metrics
from storage.engine import Store
from tests.fakes.openai_server import FakeOpenAI
from tests.incontext._helpers import api_target, fake_agents, no_secrets
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


def test_it_runs_only_for_a_spec_with_an_api_target() -> None:
    local = TargetSettings(name="local", model="embedded:gemma-3-270m")
    assert not InContextService.wanted(SpecSettings(targets=[local]))
    assert InContextService.wanted(SpecSettings(targets=[local, api_target()]))


async def test_a_frozen_snapshot_gets_the_track_then_its_report(store: Store, tmp_path: Path) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    spec = SpecSettings(name="tiny", targets=[api_target()], languages=["en", "fr"])
    async with FakeOpenAI() as server, aiohttp.ClientSession() as http:
        server.script = [{"text": "B"}] * 5 + [{"status": 500}] * 7
        service = InContextService(spec=spec, agents=fake_agents(server.base_url), gpu=GpuSettings(max_new_tokens=8),
                                   daemon=DaemonSettings(), data_dir=tmp_path, secret=no_secrets, burst=True)
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
        assert await service.run_due(ctx) == []  # the provider failed: waits out its backoff
        assert await service.run_due(ctx) == [] and server.stats.calls == 12
        service._retry_at.clear()
        server.script = [{"text": "C"}] * 7
        assert await service.run_due(ctx) == [SNAPSHOT_ID]
        assert server.stats.calls == 19  # resumed: only the failed calls asked again
        assert await service.run_due(ctx) == []  # complete: nothing more
    md = (tmp_path / "reports" / SNAPSHOT_ID / "report.md").read_text(encoding="utf-8")
    assert "In-context track (contextual, not pooled with the parametric results)" in md


async def test_an_open_gpu_job_leaves_the_report_to_the_report_writer(store: Store, tmp_path: Path) -> None:
    from sqlmodel import update

    from storage.gpu_jobs import enqueue_gpu_jobs
    from storage.models import GpuJob, LeaseStatus

    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)
    spec = SpecSettings(name="tiny", targets=[api_target()], languages=["en", "fr"])
    report = tmp_path / "reports" / SNAPSHOT_ID / "report.md"
    async with FakeOpenAI() as server, aiohttp.ClientSession() as http:
        server.script = [{"text": "B"}] * 12
        service = InContextService(spec=spec, agents=fake_agents(server.base_url), gpu=GpuSettings(max_new_tokens=8),
                                   daemon=DaemonSettings(), data_dir=tmp_path, secret=no_secrets, burst=True)
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
        assert await service.run_due(ctx) == [SNAPSHOT_ID]
        assert not report.exists()  # the job is pending: its report will carry the track
        async with store.transaction() as s:
            await s.execute(update(GpuJob).values(status=LeaseStatus.done))
        service.done.clear()  # as after a restart: the track is complete, nothing is asked
        assert await service.run_due(ctx) == [SNAPSHOT_ID] and server.stats.calls == 12
    assert report.exists()
