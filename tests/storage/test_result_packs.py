"""Result packs: a lossless re-encoding of a job's test-split correctness, written with its results; a job stored
before packs existed reads the same (its packs built from its results, not written)."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

from sqlalchemy import delete, func, select

from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.models import Entity, GpuJob, Question, ResultPack
from storage.result_packs import (
    BASE_ANSWERED,
    BASE_CORRECT,
    INJECTED_ANSWERED,
    INJECTED_CORRECT,
    PackedAnswer,
    build_packs,
    result_packs,
)


def test_the_flags_of_a_question() -> None:
    answers = [
        PackedAnswer(question_id=7, entity_id=3, lang="fr", variant="injected", scorer="generate", correct=True),
        PackedAnswer(question_id=7, entity_id=3, lang="en", variant="injected", scorer="generate", correct=False),
        PackedAnswer(question_id=7, entity_id=3, lang="en", variant="base", scorer="generate", correct=True),
        PackedAnswer(question_id=5, entity_id=2, lang="ja", variant="base", scorer="generate", correct=False),
        PackedAnswer(question_id=5, entity_id=2, lang="ja", variant="control", scorer="generate", correct=True),  # ignored
    ]
    (p,) = build_packs(9, answers)
    assert p.langs == ("en", "fr", "ja") and p.questions == 2
    assert struct.unpack("<2q", p.question_ids) == (5, 7) and struct.unpack("<2q", p.entity_ids) == (2, 3)
    w5, w7 = struct.unpack("<2Q", p.flags)
    assert w5 == 1 << (BASE_ANSWERED + 2)
    assert w7 == (1 << (INJECTED_ANSWERED + 1)) | (1 << (INJECTED_CORRECT + 1)) | (1 << INJECTED_ANSWERED) \
        | (1 << BASE_ANSWERED) | (1 << BASE_CORRECT)


async def test_written_with_the_results_and_read_the_same_without(store: Store) -> None:
    from storage.models import Snapshot, SnapshotStatus

    async with store.transaction() as s:
        s.add(Snapshot(id="s1", spec="x", period="2025-01", status=SnapshotStatus.frozen))
        for e in (1, 2):
            s.add(Entity(id=e, source="t", external_id=str(e), domain="music", name="n", occurred_at=datetime(2025, 1, 1, tzinfo=UTC),
                         content_hash="x"))
        await s.flush()
        for q in (11, 12, 21):
            s.add(Question(id=q, entity_id=q // 10, slot=str(q), lang="en", question="q?", options=["a", "b", "c", "d"], answer_index=0,
                           evidence="x", generator="g", prompt_version="v"))
        await s.flush()
        await enqueue_gpu_jobs(s, snapshot_id="s1", targets=["m"], strategies=["cpt-lora"], train_langs=["en"], max_attempts=1)
    recs = [ResultRecord(question_id=q, lang=lang, variant=v, scorer=sc, split="test", predicted="A", correct=(q + len(lang) + len(v)) % 3 == 0)
            for q in (11, 12, 21) for lang in ("en", "fr") for v in ("base", "injected") for sc in ("generate", "option-loglik")]
    recs.append(ResultRecord(question_id=11, lang="en", variant="injected", scorer="generate", split="val", predicted="A", correct=True))
    async with store.transaction() as s:
        job_id = (await s.execute(select(GpuJob.id))).scalar_one()
        assert job_id is not None
        await write_job_results(s, job_id, recs)
    async with store.session() as s:
        stored = await result_packs(s, [job_id])
        assert [(p.scorer, p.stored, p.questions) for p in stored] == [("generate", True, 3), ("option-loglik", True, 3)]
        assert (await s.execute(select(func.count()).select_from(ResultPack))).scalar_one() == 2
    async with store.transaction() as s:  # as a job stored before packs existed
        await s.execute(delete(ResultPack))
    async with store.session() as s:
        rebuilt = await result_packs(s, [job_id])
        only = await result_packs(s, [job_id], scorer="generate")
        assert (await s.execute(select(func.count()).select_from(ResultPack))).scalar_one() == 0  # nothing written by a read
    assert [(p.scorer, p.langs, p.question_ids, p.entity_ids, p.flags) for p in rebuilt] == \
        [(p.scorer, p.langs, p.question_ids, p.entity_ids, p.flags) for p in stored]
    assert [p.scorer for p in only] == ["generate"] and not only[0].stored
    async with store.transaction() as s:  # rewriting the results rewrites the packs
        await write_job_results(s, job_id, recs[:4])
    async with store.session() as s:
        assert [(p.scorer, p.questions) for p in await result_packs(s, [job_id])] == [("generate", 1), ("option-loglik", 1)]
