"""A data directory as a year of GPU jobs leaves it, on a real SQLite store: committed jobs with a checkpoint per
epoch, a failed and a pending job, the base caches, a snapshot's report with a figure of an earlier write."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update
from sqlmodel import col

from clkt.config import GpuSettings
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.models import Entity, GpuJob, LeaseStatus, Question, Snapshot, SnapshotReport, SnapshotStatus

__all__ = ["Layout", "make_data_dir"]

SNAP = "spec-2025-06-aaaaaaaaaaaa"
OTHER = "spec-2025-07-bbbbbbbbbbbb"
KEY = "0123456789abcdef"


@dataclass(frozen=True)
class Layout:
    data_dir: Path
    done: Path  # jobs/1: committed, best epoch 2 of 3
    failed: Path  # jobs/2
    pending: Path  # jobs/3 (other snapshot)
    cache_done: Path  # jobs/base/SNAP/...: no job of its pair left
    cache_busy: Path  # jobs/base/OTHER/...: a pending job reads it
    report: Path
    export: Path


def _write(p: Path, size: int) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"x" * size)
    return p


async def make_data_dir(store: Store, root: Path, *, committed_days_ago: float = 2) -> Layout:
    data = root / "data"
    export = root / "snapshots" / "spec" / "2025-06"
    _write(export / "manifest.json", 100)
    now = datetime.now(UTC)
    async with store.transaction() as s:
        s.add(Snapshot(id=SNAP, spec="spec", period="2025-06", status=SnapshotStatus.frozen, export_path=str(export)))
        s.add(Snapshot(id=OTHER, spec="spec", period="2025-07", status=SnapshotStatus.frozen, export_path=None))
        s.add(Entity(id=1, source="t", external_id="1", domain="music", name="e", occurred_at=now, content_hash="x"))
        await s.flush()
        s.add(Question(id=1, entity_id=1, slot="s", lang="en", question="q", options=["a", "b", "c", "d"], answer_index=0,
                       evidence="e", generator="g", prompt_version="v"))
        await s.flush()
        for sid, targets in ((SNAP, ["t-a", "t-b"]), (OTHER, ["t-a"])):
            await enqueue_gpu_jobs(s, snapshot_id=sid, targets=targets, strategies=["cpt-lora"], train_langs=["en"],
                                   config=GpuSettings(), max_attempts=1)
        await s.flush()
        committed = now - timedelta(days=committed_days_ago)
        await s.execute(update(GpuJob).where(col(GpuJob.id) == 1).values(
            status=LeaseStatus.done, best_epoch=2, artifacts_dir=str(data / "jobs" / "1"), updated_at=committed))
        await s.execute(update(GpuJob).where(col(GpuJob.id) == 2).values(status=LeaseStatus.failed, last_error="boom"))
        await write_job_results(s, 1, [ResultRecord(question_id=1, lang="en", variant="base", scorer="generate",
                                                    split="test", predicted="A", correct=True)])
        report = data / "reports" / SNAP
        s.add(SnapshotReport(snapshot_id=SNAP, fingerprint="f", jobs=2, path=str(report.resolve())))
    done = data / "jobs" / "1"
    for e in (1, 2, 3):
        _write(done / "checkpoints" / f"epoch-{e}" / "adapter_model.safetensors", 1000 * e)
        _write(done / "checkpoints" / f"epoch-{e}" / "state.json", 10)
        _write(done / "checkpoints" / f"epoch-{e}" / "val.json", 10)
    _write(done / "checkpoints" / "epoch-3" / "optim.pt", 5000)
    _write(done / "checkpoints" / "epoch-2" / "optim.pt", 5000)
    for name, size in (("job.log", 700), ("progress.json", 50), ("predictions.jsonl", 300), ("outcome.json", 400),
                       ("spec.json", 200)):
        _write(done / name, size)
    failed = data / "jobs" / "2"
    _write(failed / "checkpoints" / "epoch-1" / "adapter_model.safetensors", 1000)
    _write(failed / "job.log", 100)
    pending = data / "jobs" / "3"
    _write(pending / "spec.json", 100)
    cache_done = _write(data / "jobs" / "base" / SNAP / f"t-a-{KEY}.jsonl", 800)
    cache_busy = _write(data / "jobs" / "base" / OTHER / f"t-a-{KEY}.jsonl", 900)
    for name in ("report.md", "table2.csv", "pairs.csv", "learn.csv", "metrics.json"):
        _write(report / name, 100)
    (report / "report.md").write_text("# report\n![heatmap-t-a](heatmap-t-a.png)\n", encoding="utf-8")
    _write(report / "heatmap-t-a.png", 2000)
    _write(report / "heatmap-gone.png", 3000)  # an earlier write's figure, not in report.md any more
    _write(data / "models" / "m" / "weights.bin", 10_000)
    _write(data / "edit-stats" / "m-0123456789abcdef-layer3.safetensors", 4_000)
    return Layout(data_dir=data, done=done, failed=failed, pending=pending, cache_done=cache_done,
                  cache_busy=cache_busy, report=report, export=export)
