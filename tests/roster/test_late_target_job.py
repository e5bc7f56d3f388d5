"""A real GPU job of the embedded target, added after the freeze, on the snapshot minus its exclusion: its results
name none of the excluded entity's questions, the report says so, and the job's retention keeps the best adapter
and every result (slow: Gemma 3 270M on the CPU, one epoch)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select
from sqlmodel import col

from clkt.config import EMBEDDED_TARGET
from clkt.context import ServiceContext
from clkt.report.service import ReportService
from clkt.roster import LateTargetService, prepare_targets
from clkt.services import gpu_consumer
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import jobs_for_snapshot
from storage.models import Entity, Question, QuestionResult
from tests.roster._flow import Answers, build_june, export_hashes, probe_running, with_targets
from tests.targets.conftest import models_data_dir  # noqa: F401 - the shared fixture of the converted models

# the embedded model under a second name, as a target added after the freeze (cutoff 2024-11-01 + 183 days)
GEMMA_LATE = EMBEDDED_TARGET.model_copy(update={"name": "gemma-late", "cutoff": date(2024, 11, 1)})


@pytest.mark.timeout(1800)  # minutes of CPU on 2 cores: longer when the machine is shared
async def test_a_late_targets_gpu_job_runs_on_the_valid_entities_only(
    store: Store, tmp_path: Path, models_data_dir: Path  # noqa: F811 - the fixture imported above
) -> None:
    settings, res = await build_june(store, tmp_path, control_entities=0)  # the real entities only: a shorter job
    assert res.snapshot_id is not None and res.path is not None
    sid, before = res.snapshot_id, export_hashes(res.path)
    (models_data_dir / "models").mkdir(exist_ok=True)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "models").symlink_to(models_data_dir / "models", target_is_directory=True)
    restarted = with_targets(settings, EMBEDDED_TARGET, GEMMA_LATE, poll_interval_s=0.1)
    restarted = restarted.model_copy(update={
        "spec": restarted.spec.model_copy(update={"train_languages": ["en"]}),
        "gpu": restarted.gpu.model_copy(update={"epochs": 1, "max_seq_len": 128, "eval_batch_size": 16}),
    })
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    async with store.session() as s:
        known = (await s.execute(select(Entity).where(col(Entity.external_id) == "xsports0"))).scalars().one()
        known_questions = set((await s.execute(select(col(Question.id)).where(col(Question.entity_id) == known.id))).scalars())
    async with probe_running(restarted, store, Answers(known=(known.name,))) as ctx:
        (ready,) = await LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu).finish_ready(ctx)
    assert (ready.target_name, ready.excluded, ready.valid) == ("gemma-late", 1, 7)

    consumer = gpu_consumer(restarted, burst=True)
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        await consumer.run(ctx)
        await ReportService(data_dir=restarted.data_dir, daemon=restarted.daemon, burst=True).run(ctx)
    async with store.session() as s:
        (job,) = await jobs_for_snapshot(s, sid)
        answered = set((await s.execute(select(col(QuestionResult.question_id)).where(col(QuestionResult.job_id) == job.id))).scalars())
        items = set((await s.execute(select(col(Question.id)).where(col(Question.entity_id) != known.id))).scalars())
    assert job.target_model == "gemma-late" and job.status is LeaseStatus.done, job.last_error
    assert answered and not answered & known_questions  # the excluded entity's questions were never asked
    assert answered <= items
    # the report of the snapshot: this target's job, on its valid questions, and its header says so
    md = (restarted.data_dir / "reports" / sid / "report.md").read_text(encoding="utf-8")
    assert "gemma-late: 1 of 8 entities excluded, 7 valid" in md
    # the snapshot's files never changed
    assert export_hashes(res.path) == before
    # retention right after the commit: the best (only) epoch's adapter and the results stay; the rest went
    art = restarted.data_dir / "jobs" / str(job.id)
    assert (art / "checkpoints" / "epoch-1" / "adapter_model.safetensors").is_file()
    assert not (art / "checkpoints" / "epoch-1" / "optim.pt").exists() and not (art / "job.log").exists()
    assert (art / "predictions.jsonl").is_file() and (art / "outcome.json").is_file()
    assert not (restarted.data_dir / "jobs" / "base" / sid).exists()  # no job of the pair is left
    sizes = {p.name: p.stat().st_size for p in art.rglob("*") if p.is_file()}
    report = sum(p.stat().st_size for p in (restarted.data_dir / "reports" / sid).iterdir())
    print(f"\nretention footprint: job files {sizes}; {len(answered)} questions answered; report {report} bytes")
