"""The toy domain's flow (run by `test_toy_domain.py` in a process where `CLKT_DOMAIN_PACKAGES` names
`tests.domains.toy`, so the registry has it before the product's modules build their types): crawled by its own
poller from the replay server's recorded list, probed, given questions by the offline template engine, verified,
translated, then frozen in a snapshot whose documents, questions, control split and card hold it."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import aiohttp
from sqlalchemy import select, update

from clkt.config import ReplaySettings
from clkt.context import ServiceContext
from clkt.domains import DOMAINS
from clkt.facts import Domain
from clkt.replay import ReplayServer
from clkt.services import agent_backend, snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.layout import load_snapshot_dir
from clkt.sources.board import SourceBoard
from clkt.sources.poller import SourcePoller
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import LeaseStatus, Stage
from storage.models import Entity, EntityStatus, Task
from storage.tasks import enqueue
from tests.pipeline._harness import answers, pipeline_settings, running, settle

LANGS = ("en", "ja", "zh", "fr", "es")
REPLAY = ReplaySettings(enabled=True, redate=True, redate_end=date(2026, 3, 1), redate_days=28)


async def _crawl(store: Store, tmp_path: Path) -> int:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    async with ReplayServer(settings=REPLAY) as server, aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics(),
                             clock=lambda: datetime(2026, 3, 1, 12, tzinfo=UTC))
        src = settings.sources["beaconapi"].model_copy(update={"base_url": server.base_url("beaconapi"),
                                                                "rate_per_s": 1000.0, "lookback_days": 30})
        report = await SourcePoller(source_name="beaconapi", settings=src, daemon=settings.daemon,
                                    board=SourceBoard()).run_cycle(ctx)
        assert report.completed and report.inserted == 4, report
    async with store.transaction() as s:
        ids = list((await s.execute(select(Entity.id))).scalars())
        await s.execute(update(Task).where(Task.stage == Stage.gate).values(status=LeaseStatus.done))
        await s.execute(update(Entity).values(status=EntityStatus.probing))
        for i in ids:
            await enqueue(s, Stage.probe, i, "", max_attempts=3)
    return len(ids)


async def test_the_toy_domain_flows_to_a_frozen_snapshot(store: Store, tmp_path: Path) -> None:
    assert "lighthouses" in DOMAINS and Domain("lighthouses").value == "lighthouses"
    n = await _crawl(store, tmp_path)
    settings = pipeline_settings(tmp_path, langs=LANGS)
    async with running(settings, store, agent_backend(settings, store=store), answers()):
        final = await settle(store, n, timeout=240)
    async with store.session() as s:
        ready = [e for e in (await s.execute(select(Entity))).scalars() if e.status == EntityStatus.ready]
    async with store.session() as s:
        why = {e.id: e.status_reason for e in (await s.execute(select(Entity))).scalars()}
    assert {(e.domain, e.source) for e in ready} == {("lighthouses", "beaconapi")}, (final, why)
    assert len(ready) >= 2, final
    quotas = {d: 2 if d.value == "lighthouses" else 0 for d in Domain}
    frozen = settings.model_copy(update={"snapshot": settings.snapshot.model_copy(update={
        "quotas": quotas, "out_dir": tmp_path / "snapshots", "cadence": "monthly", "control_entities": 1})})
    res = await build_snapshot(store, snapshot_config(frozen), period="2026-02", now=datetime(2026, 3, 2, tzinfo=UTC))
    assert res.path is not None, res
    data = load_snapshot_dir(res.path)
    for lang in LANGS:
        docs = data.docs_for(lang)
        assert {d.domain for d in docs} == {"lighthouses"} and len(docs) == 2
    assert data.manifest.control is not None and "lighthouses" in data.manifest.control.domains
    assert "The toy lighthouse API (tests only)" in (res.path / "README.md").read_text(encoding="utf-8")
