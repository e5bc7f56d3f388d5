"""A frozen snapshot built by the real builder, and the daemon's restart with one more target: the pieces of the
late-target tests (real SQLite store, template backend, `probe_fn` answers instead of the models)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import select, update
from sqlmodel import col

from clkt.config import Settings, TargetSettings
from clkt.context import ServiceContext
from clkt.pipeline.flow import step_of
from clkt.pipeline.probe import ProbeFn, ProbeWorker
from clkt.roster import prepare_targets
from clkt.services import agent_backend, snapshot_config
from clkt.snapshots.builder import BuildResult, BuildStatus, build_snapshot
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.models import Entity, LeaseStatus, Stage, Task
from tests.conftest import wait_for
from tests.documents.samples import LIVERPOOL_SWANSEA
from tests.snapshots.factories import fill_period, make_settings

__all__ = [
    "JUNE", "KNOWS", "LATE", "Answers", "build_june", "export_hashes", "probe_running", "with_targets",
]

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
KNOWS = "Liverpool beat Swansea 4–1 at Anfield in front of 44,621 spectators."  # states the facts: known
# the target added after the freeze: cutoff 2024-11-01 + 183 days = 2025-05-03, so June 2025 is in its window
LATE = TargetSettings(name="late-chat", model="embedded:smollm2-135m-instruct", kind="instruct", cutoff=date(2024, 11, 1))


def with_targets(settings: Settings, *targets: TargetSettings, **daemon: Any) -> Settings:
    """`settings` with the spec's targets replaced (the config edited before a restart)."""
    update_ = {"spec": settings.spec.model_copy(update={"targets": list(targets)})}
    if daemon:
        update_["daemon"] = settings.daemon.model_copy(update=daemon)
    return settings.model_copy(update=update_)


async def build_june(
    store: Store, tmp_path: Path, *, period: str = "2025-06", **snapshot: Any
) -> tuple[Settings, BuildResult]:
    """A daemon's first start with the embedded target alone, then two ready entities per domain in `period`
    with real facts (the probe's judge reads them), frozen by the builder (`snapshot`: `[snapshot]` fields)."""
    settings = make_settings(tmp_path, **snapshot)
    await prepare_targets(store, spec=settings.spec, daemon=settings.daemon)  # the daemon's first start
    start = datetime.fromisoformat(f"{period}-01").replace(tzinfo=UTC)
    ids = await fill_period(store, month_start=start, per_domain=2, n_questions=3)
    async with store.transaction() as s:
        await s.execute(update(Entity).where(col(Entity.id).in_(ids)).values(facts=LIVERPOOL_SWANSEA.model_dump(mode="json")))
    res = await build_snapshot(store, snapshot_config(settings), period=period, now=datetime(2025, 7, 2, tzinfo=UTC))
    assert res.status is BuildStatus.frozen, res.describe()
    return settings, res


def export_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


class Answers:
    """Answers every prompt naming one of `known` with the facts (recognised), any other with a shrug; a name
    in `broken` raises (the target cannot be asked about it)."""

    def __init__(self, *, known: tuple[str, ...] = (), broken: tuple[str, ...] = ()) -> None:
        self.known = known
        self.broken = broken
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, target: TargetSettings, prompts: list[str], ctx: ServiceContext) -> list[str]:
        self.calls.append((target.name, len(prompts)))
        if any(b in p for p in prompts for b in self.broken):
            raise RuntimeError("the target's server refused the prompt")
        return [KNOWS if any(k in p for k in self.known) else "I am not sure what this is." for p in prompts]


async def _probes_ended(store: Store) -> bool:
    async with store.session() as s:
        rows = (await s.execute(select(col(Task.status)).where(col(Task.stage) == Stage.probe))).scalars().all()
    return all(r in (LeaseStatus.done, LeaseStatus.failed) for r in rows)


@asynccontextmanager
async def probe_running(settings: Settings, store: Store, probe_fn: ProbeFn) -> AsyncIterator[ServiceContext]:
    """The probe stage worker of `settings` (template judge, `probe_fn` instead of the targets) until every
    probe task has ended."""
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="test-owner", metrics=Metrics(),
                             agent_backend=agent_backend(settings, store=store))
        worker = ProbeWorker(step=step_of(Stage.probe), daemon=settings.daemon, spec=settings.spec,
                             agents=settings.agents, data_dir=settings.data_dir, device="cpu", secret=settings.secret,
                             probe_fn=probe_fn)
        job = asyncio.create_task(worker.run(ctx), name="probe")
        try:
            await wait_for(lambda: _probes_ended(store), timeout=60)
            yield ctx
        finally:
            ctx.stopping.set()
            await asyncio.gather(job, return_exceptions=True)
