"""Results name the export's public qids; the consumer stores them against this store's question rows."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select

from clkt.config import EMBEDDED_TARGET, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.errors import JobError
from clkt.evaluate.results import EpochRecord, ResultItem, Variant
from clkt.evaluate.summary import JobSummary
from clkt.inject.commit import result_records
from clkt.inject.contract import JobOutcome, write_json_atomic
from clkt.layout import OUTCOME_FILE
from clkt.snapshots.layout import load_snapshot_dir
from clkt.snapshots.stored import question_rows_by_qid
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, enqueue_gpu_jobs
from storage.models import GpuJob, LeaseStatus, QuestionResult
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, public_qid, seed_store


def _outcome(job_id: int, qids: list[int]) -> JobOutcome:
    return JobOutcome(
        job_id=job_id, best_epoch=1, epochs=[EpochRecord(epoch=1, loss=1.0, tokens=10, seconds=1.0)], device="cpu",
        results=[
            ResultItem(qid=q, lang=lang, variant=Variant.injected, scorer="generate", split="test", predicted="A", correct=True)
            for q in qids for lang in ("en", "fr")
        ],
        summary=JobSummary(selection_scorer="generate", scorers=["generate"], test_questions=2 * len(qids)),
    )


async def test_public_qids_map_back_to_question_rows(tmp_path: Path, tiny_snapshot: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.session() as s:
            rows = await question_rows_by_qid(s, SNAPSHOT_ID)
    data = load_snapshot_dir(tiny_snapshot)
    assert set(rows) == set(data.qids())  # the export's qids are exactly the snapshot's items
    assert rows == {public_qid(11, 1): 11, public_qid(12, 1): 12, public_qid(21, 2): 21}
    assert all(q not in rows for q in (11, 12, 21))  # row ids are not published
    recs = result_records(_outcome(1, [public_qid(21, 2)]), rows, snapshot_id=SNAPSHOT_ID)
    assert [r.question_id for r in recs] == [21, 21]
    with pytest.raises(JobError, match=r"not items of snapshot tiny-2025-06-000000000000: 12\b"):
        result_records(_outcome(1, [public_qid(21, 2), 12]), rows, snapshot_id=SNAPSHOT_ID)


@pytest.mark.parametrize("known", [True, False])
async def test_consumer_stores_results_by_row_or_fails_on_unknown_qid(tmp_path: Path, tiny_snapshot: Path, known: bool) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
        gpu=GpuSettings(devices=["cpu"]),
    )
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                                   train_langs=["en"], config=settings.gpu, max_attempts=3)
        async with store.transaction() as s:
            (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
        consumer = make_consumer(settings)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
            spec = await consumer._job_spec(ctx, job, "cpu")
            spec.artifacts_dir.mkdir(parents=True)
            qids = [public_qid(12, 1), public_qid(21, 2)] if known else [public_qid(12, 1), 987654321]
            write_json_atomic(spec.artifacts_dir / OUTCOME_FILE, _outcome(job.id, qids))
            run = await consumer._store_outcome(ctx, job.id, spec, "job")
        async with store.session() as s:
            stored = (await s.execute(select(QuestionResult))).scalars().all()
            after = await s.get(GpuJob, job.id)
    assert after is not None
    if known:
        assert run.status == LeaseStatus.done and after.status == LeaseStatus.done
        assert sorted(r.question_id for r in stored) == [12, 12, 21, 21]
    else:
        assert run.status == LeaseStatus.failed and after.status == LeaseStatus.failed  # permanent: nothing written
        assert "987654321" in (after.last_error or "") and not stored
