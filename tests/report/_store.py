"""A store with a finished snapshot for the report tests: 24 questions over three domains, answered in three
languages by two models of one family (2 train languages each, two scorers, base and injected), one failed
job, the control split's counts, and the job summaries in the flat shape the previous version wrote.

Only the repositories' tables are written (no model, no consumer), so the same store can be built by any
version of the code: `tests/report/golden/` holds what the report of this store was before reporting moved
to `clkt.report` (see `test_golden.py`).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results

__all__ = ["LANGS", "MODELS", "SNAPSHOT_ID", "old_summary", "seed_report_store"]

SNAPSHOT_ID = "golden-2025-06-000000000000"
LANGS = ("en", "fr", "ja")
DOMAINS = ("movies", "music", "sports")
QUESTIONS = 24  # 8 per domain
MODELS = {"small": 0.27, "large": 1.0}  # family "fam", size in billions
SCORERS = ("generate", "option-loglik")
WHEN = datetime(2025, 6, 1, tzinfo=UTC)


def old_summary(model: str, train_lang: str, *, control: bool) -> dict[str, Any]:
    """A job summary as the previous version stored it: flat `variant:scorer:accuracy`, `learn:scorer:field`
    keys from the job process, then `epochs`, the target's identity and the control counts from the consumer."""
    s: dict[str, Any] = {
        "selection_scorer": "option-loglik", "scorers": "generate,option-loglik", "generate_parse": "reference",
        "val_questions": 6, "test_questions": QUESTIONS, "control_questions": 4 if control else 0, "train_examples": 9,
        "train_tokens_per_s": 812.5, "resumed_after_epoch": 0,
        "base:generate:accuracy": 0.25, "base:generate:parse_failure_rate": 0.125,
        "base:option-loglik:accuracy": 0.2916666666666667,
        "injected:generate:accuracy": 0.5, "injected:generate:parse_failure_rate": 0.0,
        "injected:option-loglik:accuracy": 0.625,
    }
    for prefix in ("learn", *(("learn-control",) if control else ())):
        for scorer in SCORERS:
            s.update({
                f"{prefix}:{scorer}:n": 8, f"{prefix}:{scorer}:base_accuracy": 0.25,
                f"{prefix}:{scorer}:injected_accuracy": 0.75, f"{prefix}:{scorer}:gain": 0.5,
                f"{prefix}:{scorer}:gained": 4, f"{prefix}:{scorer}:lost": 0, f"{prefix}:{scorer}:p_value": 0.125,
                f"{prefix}:{scorer}:learned": False,
            })
    s["epochs"] = [
        {"epoch": 1, "loss": 2.5, "tokens": 4000, "seconds": 5.0, "val_accuracy": 0.5, "val_margin": 0.25},
        {"epoch": 2, "loss": 1.25, "tokens": 4000, "seconds": 4.5, "val_accuracy": 0.5, "val_margin": None},
    ]
    s.update(target_family="fam", target_size_b=MODELS.get(model), target_model_id=f"org/{model}")
    if control:
        s["control"] = {scorer: {
            train_lang: {"n": 4, "base_correct": 1, "injected_correct": 4, "gained": 3, "lost": 0},
            **{lang: {"n": 4, "base_correct": 1, "injected_correct": 2, "gained": 2, "lost": 1} for lang in LANGS if lang != train_lang},
        } for scorer in SCORERS}
    return s


def _right(rng: random.Random, model: str, train: str, lang: str, variant: str, q: int) -> bool:
    if variant == "base":
        return rng.random() < 0.25
    skill = 0.9 if model == "large" else 0.55
    if lang == train:
        return rng.random() < skill
    return rng.random() < skill * (0.6 if lang != "ja" else 0.3) + (0.1 if q % 3 == 0 else 0.0)


async def seed_report_store(store: Store, *, summaries: dict[tuple[str, str], dict[str, Any]] | None = None) -> None:
    """Fill `store`. `summaries`: (model, train language) -> the stored summary (default: `old_summary`)."""
    from storage.models import Entity, GpuJob, LeaseStatus, Question, Snapshot, SnapshotStatus

    async with store.transaction() as s:
        s.add(Snapshot(id=SNAPSHOT_ID, spec="golden", period="2025-06", status=SnapshotStatus.frozen,
                       export_path="/nonexistent", manifest={"languages": list(LANGS)}))
        for e in range(QUESTIONS):
            s.add(Entity(id=e + 1, source="fixture", external_id=str(e + 1), domain=DOMAINS[e % 3], name=f"entity {e + 1}",
                         occurred_at=WHEN, content_hash="x"))
        await s.flush()
        for e in range(QUESTIONS):
            s.add(Question(id=100 + e, entity_id=e + 1, slot=f"s{e}", lang="en", question=f"q{e}?", options=["a", "b", "c", "d"],
                           answer_index=0, evidence="x", generator="fixture", prompt_version="v1"))
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=list(MODELS), strategies=["cpt-lora"], train_langs=["en", "fr"],
                               max_attempts=1)
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["broken"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)
    async with store.transaction() as s:
        from sqlmodel import col, select

        jobs = (await s.execute(select(GpuJob).order_by(col(GpuJob.id)))).scalars().all()
        for job in jobs:
            assert job.id is not None
            if job.target_model == "broken":
                job.status, job.last_error, job.attempts = LeaseStatus.failed, "model-unavailable: no model at /models/broken", 1
                continue
            rng = random.Random(f"{job.target_model}/{job.train_lang}")
            recs = [
                ResultRecord(question_id=100 + q, lang=lang, variant=variant, scorer=scorer, split="test",
                             predicted=None if (scorer == "generate" and q % 7 == 0 and variant == "base") else "A",
                             correct=_right(rng, job.target_model, job.train_lang, lang, variant, q))
                for scorer in SCORERS for variant in ("base", "injected") for lang in LANGS for q in range(QUESTIONS)
            ]
            await write_job_results(s, job.id, recs)
            key = (job.target_model, job.train_lang)
            job.status, job.best_epoch, job.device, job.attempts = LeaseStatus.done, 2, "cpu", 1
            job.summary = (summaries or {}).get(key) or old_summary(job.target_model, job.train_lang, control=job.target_model == "large")
