"""science (arXiv) and spaceflight (Launch Library 2) end to end: crawled by the real pollers from the replay
server's re-dated recordings, probed, given questions by the offline template engine, verified, translated into
the five languages, then frozen in a snapshot whose exports hold both domains and whose card states both
sources' terms (CC0 for arXiv's metadata, The Space Devs' terms)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import aiohttp
from sqlalchemy import select, update

from clkt.config import ReplaySettings
from clkt.context import ServiceContext
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
NEW = {"arxiv": "science", "launchlibrary": "spaceflight"}


async def _crawl(store: Store, tmp_path: Path) -> int:
    """Both new sources crawled into `store`; every entity then queued for the probe (what the gate does)."""
    settings = pipeline_settings(tmp_path, langs=LANGS)
    replay = ReplaySettings(enabled=True, redate=True, redate_end=date(2026, 3, 1), redate_days=28)
    async with ReplayServer(settings=replay) as server, aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics(),
                             clock=lambda: datetime(2026, 3, 1, 12, tzinfo=UTC))
        for name in NEW:
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


async def test_both_new_domains_flow_to_a_frozen_snapshot(store: Store, tmp_path: Path) -> None:
    n = await _crawl(store, tmp_path)
    assert n == 15 + 3  # first-version papers, launches with a final outcome
    settings = pipeline_settings(tmp_path, langs=LANGS)
    async with running(settings, store, agent_backend(settings, store=store), answers()):
        final = await settle(store, n, timeout=240)
    async with store.session() as s:
        ready = {(e.domain, e.source) for e in (await s.execute(select(Entity))).scalars()
                 if e.status == EntityStatus.ready}
    assert ready == {("science", "arxiv"), ("spaceflight", "launchlibrary")}, final
    quotas = {d: 2 if d.value in NEW.values() else 0 for d in Domain}
    frozen = settings.model_copy(update={"snapshot": settings.snapshot.model_copy(update={
        "quotas": quotas, "out_dir": tmp_path / "snapshots", "cadence": "monthly", "control_entities": 1})})
    res = await build_snapshot(store, snapshot_config(frozen), period="2026-02", now=datetime(2026, 3, 2, tzinfo=UTC))
    assert res.path is not None, res
    data = load_snapshot_dir(res.path)
    for lang in LANGS:
        assert {d.domain for d in data.docs_for(lang)} == {"science", "spaceflight"}
        assert len(data.docs_for(lang)) == 4
    card = (res.path / "README.md").read_text(encoding="utf-8")
    assert "CC0" in card and "The Space Devs" in card
    assert data.manifest.control is not None and {"science", "spaceflight"} <= set(data.manifest.control.domains)
