"""The control split in a GPU job: injected with the real documents, scored on its own, never stored as a
real result (only as counts in the job's summary)."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select
from sqlmodel import col

from clkt.config import EMBEDDED_TARGET, DaemonSettings, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.summary import ControlCounts, JobSummary
from clkt.inject.commit import control_counts
from clkt.layout import job_dir
from clkt.snapshots.layout import load_snapshot_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import QuestionResult
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, public_qid, seed_store, write_tiny_snapshot


def _item(qid: int, lang: str, variant: Variant, correct: bool, scorer: str = "s") -> ResultItem:
    return ResultItem(qid=qid, lang=lang, variant=variant, scorer=scorer, split="control", predicted="A", correct=correct)


def test_control_counts_pair_base_and_injected_per_question() -> None:
    items = [
        _item(1, "en", Variant.base, False), _item(1, "en", Variant.injected, True),  # gained
        _item(2, "en", Variant.base, True), _item(2, "en", Variant.injected, False),  # lost
        _item(3, "en", Variant.base, True), _item(3, "en", Variant.injected, True),
        _item(4, "en", Variant.base, False),  # no injected answer: not counted
        _item(1, "fr", Variant.base, False), _item(1, "fr", Variant.injected, False),
    ]
    assert control_counts(items) == {
        "s": {
            "en": ControlCounts(n=3, base_correct=2, injected_correct=2, gained=1, lost=1),
            "fr": ControlCounts(n=1, base_correct=0, injected_correct=0, gained=0, lost=0),
        }
    }


@pytest.mark.slow
async def test_job_injects_and_scores_the_control_split_apart(tmp_path: Path, data_dir: Path) -> None:
    snap = write_tiny_snapshot(tmp_path / "snapshot", control_domains=("sports",))
    control = load_snapshot_dir(snap, verify_hashes=False).control_questions_for("en")
    assert control
    settings = Settings(
        data_dir=data_dir,
        spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
        gpu=GpuSettings(devices=["cpu"], epochs=1, max_seq_len=256, torch_threads=2, scorers=["letter-logprob"]),
        daemon=DaemonSettings(poll_interval_s=0.1, lease_s=60),
    )
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, snap)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(
                s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"], train_langs=["en"],
                config=settings.gpu, max_attempts=1,
            )
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
            await make_consumer(settings, burst=True).run(ctx)
        async with store.session() as s:
            [job] = await jobs_for_snapshot(s, SNAPSHOT_ID)
            rows = (await s.execute(select(QuestionResult).where(col(QuestionResult.job_id) == job.id))).scalars().all()
    summary = JobSummary.from_stored(job.summary)
    assert summary is not None and summary.control_questions == 2 * len(control), job.last_error
    # the real results: only the real test questions (rows 12 and 21), never a control one
    assert {r.question_id for r in rows} == {12, 21}
    # the control answers: counts per test language, every control question paired
    counts = summary.control["letter-logprob"]
    assert set(counts) == {"en", "fr"}
    assert all(c.n == len(control) for c in counts.values())
    assert all(c.gained - c.lost == c.injected_correct - c.base_correct for c in counts.values())
    # Learn of the control split in the train language, apart from the real questions' (part A)
    assert summary.learn_control["letter-logprob"].n == counts["en"].n
    assert summary.learn_control["letter-logprob"].gained == counts["en"].gained
    assert summary.learn["letter-logprob"].n == 2  # the real en test questions (rows 12 and 21)
    # predictions.jsonl keeps them, marked as control; the control documents were injected with the real ones
    preds = [json.loads(line) for line in (job_dir(data_dir, job.id or 0) / "predictions.jsonl").read_text().splitlines()]
    ctl_qids = {q.qid for q in control}
    assert {p["qid"] for p in preds} >= ctl_qids | {public_qid(12, 1), public_qid(21, 2)}
    assert summary.train_examples >= 3
