"""A store and data folder for the page tests: entities in every state (one with a hostile name), their
documents and questions, source cursors and skips, stage failures, GPU jobs, a frozen snapshot exported with
its manifest and a report written from stored results (no model needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import col, select, update

from clkt.config import Settings, load_settings
from clkt.report.writer import report_dir, write_report
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest
from storage.engine import Store
from storage.entities import record_skip
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.models import EntityStatus, GpuJob, LeaseStatus, Snapshot, SourceCursor, Stage, Task
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot
from tests.snapshots.factories import add_ready_entity

__all__ = ["HOSTILE_NAME", "JA_TEXT", "SNAPSHOT_ID", "seed", "write_config"]

JA_TEXT = "スポーツ 777 の試合は 2026 年 12 月 1 日に行われ、4 対 1 で終わった。"
HOSTILE_NAME = '<script>alert(1)</script><b>x</b><img src=x onerror="alert(2)">'


def write_config(tmp_path: Path, *, extra: str = "", port: int = 0) -> Path:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f"""
data_dir = "{tmp_path / 'data'}"
[http]
port = {port}
refresh_s = 0
[gpu]
enabled = false
[snapshot]
out_dir = "{tmp_path / 'snapshots'}"
{extra}
"""
    )
    return cfg


async def seed(store: Store, settings: Settings, root: Path) -> dict[str, int]:
    """Fill `store` (and `settings.data_dir`, `root/snap`) with everything a page shows. Returns entity ids."""
    snap_dir = write_tiny_snapshot(root / "snap", control_domains=())
    await seed_store(store, snap_dir)  # entities 1, 2 and their questions; snapshot row
    if store.dialect == "postgresql":  # seed_store chose the ids: move the sequences past them
        from sqlalchemy import text

        async with store.transaction() as s:
            for table in ("entity", "question"):
                await s.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"))
    manifest = SnapshotManifest.model_validate_json((snap_dir / MANIFEST_FILE).read_bytes())
    manifest = manifest.model_copy(update={"quotas": {"movies": 1, "sports": 2}, "counts": {
        **manifest.counts, "movies": manifest.counts["total"].model_copy(update={"entities": 1, "fact_qas": 2, "val": 1, "test": 1}),
        "sports": manifest.counts["total"].model_copy(update={"entities": 1, "fact_qas": 1, "val": 0, "test": 1}),
    }, "missing": {"sports": 1}})
    async with store.transaction() as s:
        row = await s.get(Snapshot, SNAPSHOT_ID)
        assert row is not None
        row.manifest = manifest.model_dump(mode="json")
    now = datetime.now(UTC)
    ids = {
        "hostile": await add_ready_entity(store, domain="music", source="deezer", external_id="evil1", occurred_at=now - timedelta(minutes=3)),
        "ready": await add_ready_entity(store, domain="sports", source="thesportsdb", external_id="777", occurred_at=now - timedelta(minutes=2)),
        "old": await add_ready_entity(store, domain="disasters", source="usgs", external_id="ci3144585",
                                      occurred_at=datetime(1994, 6, 9, tzinfo=UTC), status=EntityStatus.ineligible, n_questions=0),
        "known": await add_ready_entity(store, domain="movies", source="tmdb", external_id="550", occurred_at=now - timedelta(minutes=1),
                                        status=EntityStatus.known, n_questions=0),
    }
    async with store.transaction() as s:
        from storage.models import Document, Entity

        e = await s.get(Entity, ids["hostile"])
        assert e is not None
        e.name = HOSTILE_NAME
        doc = (await s.execute(select(Document).where(col(Document.entity_id) == ids["ready"], col(Document.lang) == "ja"))).scalar_one()
        doc.text = JA_TEXT
        s.add(SourceCursor(source="deezer", watermark=now - timedelta(hours=1), page=0, state={}))
        s.add(Task(stage=Stage.generate, entity_id=ids["ready"], key="x", status=LeaseStatus.failed, attempts=5,
                   last_error="ValueError: <i>bad</i> output"))
    async with store.transaction() as s:
        await record_skip(s, "deezer", "missing_id", "item 3")
        await record_skip(s, "deezer", "missing_id", "item 4")
        await record_skip(s, "usgs", "bad_date", "TBA")
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["m"], strategies=["cpt-lora"], train_langs=["en", "fr"],
                               max_attempts=1)
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob))).scalars().all():
            assert job.id is not None
            recs = [
                ResultRecord(question_id=q, lang=lang, variant=v, scorer="generate", split="test", predicted="A",
                             correct=(v == "injected" and lang == job.train_lang) or q == 12)
                for q in (12, 21) for lang in ("en", "fr") for v in ("base", "injected")
            ]
            await write_job_results(s, job.id, recs)
        await s.execute(update(GpuJob).values(status=LeaseStatus.done, best_epoch=2))
    await write_report(store, SNAPSHOT_ID, report_dir(settings.data_dir, SNAPSHOT_ID))
    return ids


def settings_for(cfg: Path) -> Settings:
    return load_settings(cfg, environ={})
