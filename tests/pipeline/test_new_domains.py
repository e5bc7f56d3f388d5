"""science (arXiv) and spaceflight (Launch Library 2) end to end: crawled by the real pollers from the replay
server's re-dated recordings, probed, given questions by the offline template engine, verified, translated into
the five languages, then frozen in a snapshot whose exports hold both domains and whose card states both
sources' terms (CC0 for arXiv's metadata, The Space Devs' terms)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from clkt.facts import Domain
from clkt.services import agent_backend, snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.layout import load_snapshot_dir
from storage.engine import Store
from storage.models import Entity, EntityStatus
from tests.pipeline._harness import answers, crawl_replayed, pipeline_settings, running, settle

LANGS = ("en", "ja", "zh", "fr", "es")
NEW = {"arxiv": "science", "launchlibrary": "spaceflight"}


async def test_both_new_domains_flow_to_a_frozen_snapshot(store: Store, tmp_path: Path) -> None:
    n = await crawl_replayed(store, pipeline_settings(tmp_path, langs=LANGS), NEW)
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
