"""The toy domain's flow (run by `test_toy_domain.py` in a process where `CLKT_DOMAIN_PACKAGES` names
`tests.domains.toy`, so the registry has it before the product's modules build their types): crawled by its own
poller from the replay server's recorded list, probed, given questions by the offline template engine, verified,
translated, then frozen in a snapshot whose documents, questions, control split and card hold it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from clkt.domains import DOMAINS
from clkt.facts import Domain
from clkt.services import agent_backend, snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.layout import load_snapshot_dir
from storage.engine import Store
from storage.models import Entity, EntityStatus
from tests.pipeline._harness import answers, crawl_replayed, pipeline_settings, running, settle

LANGS = ("en", "ja", "zh", "fr", "es")


async def test_the_toy_domain_flows_to_a_frozen_snapshot(store: Store, tmp_path: Path) -> None:
    assert "lighthouses" in DOMAINS and Domain("lighthouses").value == "lighthouses"
    n = await crawl_replayed(store, pipeline_settings(tmp_path, langs=LANGS), ("beaconapi",))
    assert n == 4  # every recorded lighthouse
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
