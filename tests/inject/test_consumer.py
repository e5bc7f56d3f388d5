"""One full job end to end through the consumer (child process, store, report), after a failing one."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import func, select
from sqlmodel import col

from clkt.config import EMBEDDED_TARGET, DaemonSettings, GpuSettings, Settings, SpecSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.evaluate.summary import JobSummary
from clkt.layout import job_dir
from clkt.report.service import ReportService
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus, QuestionResult
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store


def _settings(data_dir: Path, tmp_path: Path) -> Settings:
    broken = TargetSettings(name="broken", model=str(tmp_path / "no-such-model"))
    return Settings(
        data_dir=data_dir,
        # per target: option-loglik (acc + acc_norm rows) and generate, parsed by the reference rule
        spec=SpecSettings(targets=[EMBEDDED_TARGET.model_copy(update={"scorers": ["option-loglik", "generate"]}), broken],
                          languages=["en", "fr"]),
        gpu=GpuSettings(devices=["cpu"], epochs=1, max_new_tokens=4, max_seq_len=128, torch_threads=2, parse="reference"),
        daemon=DaemonSettings(poll_interval_s=0.1, lease_s=60),
    )


@pytest.mark.slow
async def test_failing_job_then_full_job_end_to_end(tmp_path: Path, data_dir: Path, tiny_snapshot: Path) -> None:
    settings = _settings(data_dir, tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            n = await enqueue_gpu_jobs(
                s, snapshot_id=SNAPSHOT_ID, targets=["broken", "gemma-3-270m"], strategies=["cpt-lora"], train_langs=["en"],
                config=settings.gpu, max_attempts=2,
            )
            again = await enqueue_gpu_jobs(
                s, snapshot_id=SNAPSHOT_ID, targets=["broken", "gemma-3-270m"], strategies=["cpt-lora"], train_langs=["en"],
                config=settings.gpu, max_attempts=2,
            )
        assert (n, again) == (2, 0)  # idempotent
        consumer = make_consumer(settings, burst=True)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="test-owner", metrics=Metrics())
            await consumer.run(ctx)
            await ReportService(data_dir=settings.data_dir, daemon=settings.daemon, burst=True).run(ctx)
        async with store.session() as s:
            broken, good = await jobs_for_snapshot(s, SNAPSHOT_ID)
            n_results = (await s.execute(select(func.count()).select_from(QuestionResult).where(col(QuestionResult.job_id) == good.id))).scalar_one()
            rows = (await s.execute(select(QuestionResult).where(col(QuestionResult.job_id) == good.id))).scalars().all()
    # the broken target failed for good, with a reason naming what is missing
    assert broken.status == LeaseStatus.failed and broken.attempts == 1
    assert "model-unavailable" in (broken.last_error or "") and "no-such-model" in (broken.last_error or "")
    # ... and the next job still ran, end to end
    assert good.status == LeaseStatus.done, good.last_error
    assert good.best_epoch == 1 and good.device == "cpu"
    # 2 test questions x 2 languages x 3 result scorers x (base, injected)
    assert n_results == 24
    result_scorers = ("option-loglik", "option-loglik-norm", "generate")
    assert {(r.variant, r.scorer) for r in rows} == {(v, s) for v in ("base", "injected") for s in result_scorers}
    assert all(r.predicted in (None, "A", "B", "C", "D") for r in rows)
    art = job_dir(data_dir, good.id or 0)
    assert (art / "checkpoints" / "epoch-1" / "adapter_model.safetensors").is_file()
    val = json.loads((art / "checkpoints" / "epoch-1" / "val.json").read_text())
    assert val["scorer"] == "option-loglik" and val["n"] == 1 and val["accuracy"] in (0.0, 1.0)  # acc only, not acc_norm too
    preds = [json.loads(line) for line in (art / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 24
    summary = JobSummary.from_stored(good.summary)
    assert summary is not None and summary.epochs[0].tokens > 0
    # Learn per result scorer, on the 2 train-language test questions, with its exact McNemar p
    assert summary.selection_scorer == "option-loglik" and summary.generate_parse == "reference"
    for scorer in result_scorers:
        assert summary.learn[scorer].n == 2
        assert 0 < summary.learn[scorer].p_value <= 1
        assert summary.learn[scorer].learned is False  # 2 questions can never be significant
    # every job finished: the report service wrote the report
    report = data_dir / "reports" / SNAPSHOT_ID
    md = (report / "report.md").read_text()
    assert "Model comparison — cpt-lora" in md and "broken" in md  # the failed job is noted
    import matplotlib.image as mpimg

    heat = list(report.glob("heatmap-*.png"))
    assert heat and mpimg.imread(heat[0]).ndim == 3
