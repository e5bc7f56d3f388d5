"""Run the four generator stages on a real SQLite store until every entity reaches a final status."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import select, update

from agents.backend import AgentBackend
from clkt.config import ReplaySettings, Settings, TargetSettings
from clkt.context import ServiceContext
from clkt.documents import render_document
from clkt.facts import EntityFacts
from clkt.pipeline.flow import step_of
from clkt.pipeline.generate import GenerateWorker
from clkt.pipeline.probe import ProbeFn, ProbeWorker
from clkt.pipeline.stage_worker import StageWorker
from clkt.pipeline.translate import TranslateWorker
from clkt.pipeline.verify import VerifyWorker
from clkt.replay import ReplayServer
from clkt.sources.board import SourceBoard
from clkt.sources.poller import SourcePoller
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.models import Document, Entity, EntityStatus, Stage, Task
from storage.tasks import enqueue
from tests.conftest import wait_for

__all__ = ["FINAL", "add_entity", "answers", "pipeline_settings", "running", "settle", "stage_workers", "statuses"]

FINAL = {EntityStatus.known, EntityStatus.ready, EntityStatus.rejected, EntityStatus.failed}
TARGETS = [  # (cutoffs for the gate, when a test runs it)
    TargetSettings(name="tiny-base", model="local:/nowhere", kind="base", cutoff=date(2024, 1, 1)),
    TargetSettings(name="tiny-chat", model="local:/nowhere-2", kind="instruct", cutoff=date(2024, 1, 1)),
]


def pipeline_settings(tmp_path: Path, *, agents: dict[str, Any] | None = None, langs: Sequence[str] = ("en", "fr", "ja")) -> Settings:
    return Settings(
        data_dir=tmp_path,
        agents={"questions_per_entity": 3, **(agents or {})},
        spec={"languages": list(langs), "targets": [t.model_dump() for t in TARGETS]},
        daemon={"poll_interval_s": 0.02, "lease_s": 30.0, "grace_period_s": 5.0},
    )


async def add_entity(
    store: Store, facts: EntityFacts, name: str, *, domain: str, external_id: str, max_attempts: int = 5
) -> int:
    doc = render_document(facts, "en")
    payload = facts.model_dump(mode="json")
    content_hash = hashlib.sha256(repr(payload).encode()).hexdigest()
    async with store.transaction() as s:
        e = Entity(source="test", external_id=external_id, domain=domain, name=name,
                   occurred_at=datetime(2025, 9, 1, tzinfo=UTC), payload=payload, facts=payload,
                   content_hash=content_hash, status=EntityStatus.probing)
        s.add(e)
        await s.flush()
        assert e.id is not None
        s.add(Document(entity_id=e.id, lang="en", origin="source", text=doc.text,
                       text_hash=hashlib.sha256(doc.text.encode()).hexdigest(), content_hash=content_hash))
        await enqueue(s, Stage.probe, e.id, "", max_attempts=max_attempts)
        return e.id


class Answers:
    """A probe function that answers every prompt with `text` and records each call in `calls`."""

    def __init__(self, text: str = "I am not sure what this is.") -> None:
        self.text = text
        self.calls: list[tuple[str, list[str]]] = []

    async def __call__(self, target: TargetSettings, prompts: list[str], ctx: ServiceContext) -> list[str]:
        self.calls.append((target.name, list(prompts)))
        return [self.text for _ in prompts]


def answers(text: str = "I am not sure what this is.") -> Answers:
    return Answers(text)


async def statuses(store: Store) -> dict[int, EntityStatus]:
    async with store.session() as s:
        return {e.id: EntityStatus(e.status) for e in (await s.execute(select(Entity))).scalars()}


def stage_workers(settings: Settings, probe_fn: ProbeFn | None, *, locality_entities: int = 0) -> list[StageWorker]:
    """The four generator stages' workers, each with its sections of `settings` (`probe_fn`: instead of the targets;
    `locality_entities`: known entities per month that go on for locality questions, probed one at a time)."""
    d, agents, spec = settings.daemon, settings.agents, settings.spec
    return [
        ProbeWorker(step=step_of(Stage.probe), daemon=d, spec=spec, agents=agents, data_dir=settings.data_dir,
                    device=settings.gpu.devices[0], secret=settings.secret, probe_fn=probe_fn,
                    locality_entities=locality_entities, concurrency=1 if locality_entities else None),
        GenerateWorker(step=step_of(Stage.generate), daemon=d, agents=agents, concurrency=2),
        VerifyWorker(step=step_of(Stage.verify), daemon=d, agents=agents, concurrency=2),
        TranslateWorker(step=step_of(Stage.translate), daemon=d, spec=spec, agents=agents, concurrency=2),
    ]


@asynccontextmanager
async def running(
    settings: Settings, store: Store, backend: AgentBackend, probe_fn: ProbeFn | None, *, locality_entities: int = 0,
) -> AsyncIterator[ServiceContext]:
    """Run the four workers until the block ends (use `settle()` inside to wait for final statuses); `probe_fn`
    None: the targets are asked for real."""
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="test-owner", metrics=Metrics(), agent_backend=backend)
        workers = stage_workers(settings, probe_fn, locality_entities=locality_entities)
        jobs = [asyncio.create_task(w.run(ctx), name=w.name) for w in workers]
        try:
            yield ctx
        finally:
            ctx.stopping.set()
            await asyncio.gather(*jobs, return_exceptions=True)


async def settle(store: Store, n: int, *, timeout: float = 60.0) -> dict[int, EntityStatus]:
    async def done() -> bool:
        st = await statuses(store)
        return len(st) == n and all(v in FINAL for v in st.values())

    await wait_for(done, timeout=timeout, interval=0.1)
    return await statuses(store)


async def crawl_replayed(store: Store, settings: Settings, sources: Sequence[str]) -> int:
    """`sources` crawled by their real pollers from the replay server's recordings (re-dated into February 2026,
    read on 1 March 2026), each cycle completing with something inserted; every entity then queued for the probe
    (what the gate does). The number of entities."""
    replay = ReplaySettings(enabled=True, redate=True, redate_end=date(2026, 3, 1), redate_days=28)
    async with ReplayServer(settings=replay) as server, aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics(),
                             clock=lambda: datetime(2026, 3, 1, 12, tzinfo=UTC))
        for name in sources:
            src = settings.sources[name].model_copy(update={"base_url": server.base_url(name), "rate_per_s": 1000.0,
                                                            "lookback_days": 30})
            report = await SourcePoller(source_name=name, settings=src, daemon=settings.daemon,
                                        board=SourceBoard()).run_cycle(ctx)
            assert report.completed and report.inserted, report
    async with store.transaction() as s:
        ids = list((await s.execute(select(Entity.id))).scalars())
        await s.execute(update(Task).where(Task.stage == Stage.gate).values(status=LeaseStatus.done))
        await s.execute(update(Entity).values(status=EntityStatus.probing))
        for i in ids:
            await enqueue(s, Stage.probe, i, "", max_attempts=3)
    return len(ids)
