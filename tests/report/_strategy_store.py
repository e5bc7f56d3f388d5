"""The leaderboard window store (`tests.report._window_store`) with more strategies for target alpha: `memit`
trained in en and fr on every snapshot (scored `generate` only; base answers copied from alpha's cpt-lora job of
the same snapshot and train language, injected answers seeded: it learns its train language better and transfers
worse; every seventh question left unanswered), and `sft-lora` trained in ja only on 2025-01 (no train language in
common with the others). Beta keeps cpt-lora only.
"""

from __future__ import annotations

import random

from sqlmodel import col, select

from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.models import GpuJob, LeaseStatus, QuestionResult
from tests.report._window_store import LANGS, PERIODS, WindowStore, seed_window_store

__all__ = ["seed_strategy_store"]


def _injected(rng: random.Random, q: int, train: str) -> list[ResultRecord]:
    out = []
    for lang in LANGS:
        ok = rng.random() < (0.95 if lang == train else 0.3)
        out.append(ResultRecord(question_id=q, lang=lang, variant="injected", scorer="generate", split="test",
                                predicted="A" if ok else rng.choice("BCD"), correct=ok))
    return out


async def _add_jobs(store: Store, info: WindowStore) -> None:
    async with store.transaction() as s:
        for period in PERIODS:
            await enqueue_gpu_jobs(s, snapshot_id=info.snapshots[period], targets=["alpha"], strategies=["memit"],
                                   train_langs=["en", "fr"], max_attempts=1)
        await enqueue_gpu_jobs(s, snapshot_id=info.snapshots[PERIODS[0]], targets=["alpha"], strategies=["sft-lora"],
                               train_langs=["ja"], max_attempts=1)


async def seed_strategy_store(store: Store, *, seed: int = 11) -> WindowStore:
    info = await seed_window_store(store)
    await _add_jobs(store, info)
    rng = random.Random(seed)
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.target_model) == "alpha").order_by(col(GpuJob.id)))).scalars().all()
        cpt = {(j.snapshot_id, j.train_lang): j.id for j in jobs if j.strategy == "cpt-lora"}
        for job in jobs:
            if job.strategy == "cpt-lora" or job.snapshot_id not in info.snapshots.values():
                continue
            assert job.id is not None
            source = cpt[(job.snapshot_id, "en" if job.strategy == "sft-lora" else job.train_lang)]
            base = (await s.execute(select(QuestionResult).where(
                col(QuestionResult.job_id) == source, col(QuestionResult.scorer) == "generate",
                col(QuestionResult.variant) == "base"))).scalars().all()
            recs = [ResultRecord(question_id=r.question_id, lang=r.lang, variant="base", scorer="generate", split=r.split,
                                 predicted=r.predicted, correct=r.correct) for r in base if r.question_id % 7]
            for q in sorted({r.question_id for r in base if r.question_id % 7}):
                recs += _injected(rng, q, job.train_lang)
            await write_job_results(s, job.id, recs)
            job.status, job.attempts = LeaseStatus.done, 1
    return info
