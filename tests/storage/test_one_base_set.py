"""The store keeps one base answer set per (snapshot, target, scorer): a job whose base pass answered a question
otherwise than the target's first done job (another dtype, another kind of device) is stored with that job's base
answers, in its results and its result pack alike; its injected answers, and other targets' jobs, are its own."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import col, select

from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, one_base_set, results_for_snapshot, write_job_results
from storage.models import Entity, GpuJob, LeaseStatus, Question, Snapshot
from storage.result_packs import BASE_CORRECT, INJECTED_CORRECT, result_packs

SID = "s1"
WHEN = datetime(2025, 6, 1, tzinfo=UTC)
QUESTIONS = (11, 12, 13)


async def _store_jobs(store: Store) -> list[int]:
    async with store.transaction() as s:
        s.add(Snapshot(id=SID, spec="demo", period="2025-06"))
        for e in (1, 2, 3):
            s.add(Entity(id=e, source="fixture", external_id=str(e), domain="movies", name=f"e{e}", occurred_at=WHEN,
                         content_hash="x"))
        await s.flush()
        for q in QUESTIONS:
            s.add(Question(id=q, entity_id=q - 10, slot="s", lang="en", question="q?", options=["a", "b", "c", "d"],
                           answer_index=0, evidence="x", generator="fixture", prompt_version="v1"))
        await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m", "other"], strategies=["cpt-lora", "full-ft"],
                               train_langs=["en"], max_attempts=1)
    async with store.session() as s:
        jobs = (await s.execute(select(GpuJob).order_by(col(GpuJob.id)))).scalars().all()
        return [int(j.id or 0) for j in jobs if j.target_model == "m"] + [int(j.id or 0) for j in jobs if j.target_model != "m"]


def _records(base_right: set[int], *, questions: tuple[int, ...] = QUESTIONS) -> list[ResultRecord]:
    return [ResultRecord(question_id=q, lang="en", variant=v, scorer="option-loglik", split="test",
                         predicted="A" if (v == "injected" or q in base_right) else "B",
                         correct=v == "injected" or q in base_right, raw=f"{v}-{q}")
            for q in questions for v in ("base", "injected")]


async def _commit(store: Store, job_id: int, records: list[ResultRecord]) -> None:
    async with store.transaction() as s:
        await write_job_results(s, job_id, records)
        job = await s.get(GpuJob, job_id)
        assert job is not None
        job.status = LeaseStatus.done


async def test_a_later_job_of_the_target_is_stored_with_its_base_set(store: Store) -> None:
    m_cpt, m_full, o_cpt, _ = await _store_jobs(store)
    await _commit(store, m_cpt, _records({11}))  # the first: base right on question 11 only
    await _commit(store, m_full, _records({11, 12, 13}, questions=(11, 12)))  # fp32: base right on 11 and 12 (13: none)
    await _commit(store, o_cpt, _records({12, 13}))  # another target: its own base answers
    async with store.session() as s:
        rows = await results_for_snapshot(s, SID)
        packs = {p.job_id: p for p in await result_packs(s, [m_cpt, m_full, o_cpt])}
    base = {(r.job_id, r.question_id): (r.predicted, r.correct) for r in rows if r.variant == "base"}
    assert [base[(m_full, q)] for q in (11, 12)] == [("A", True), ("B", False)]  # the first job's answers
    assert [base[(o_cpt, q)] for q in QUESTIONS] == [("B", False), ("A", True), ("A", True)]  # untouched
    assert all(r.correct for r in rows if r.variant == "injected")  # injected answers are each job's own
    flags = packs[m_full].flags
    words = [int.from_bytes(flags[i : i + 8], "little") for i in range(0, len(flags), 8)]
    assert [bool(w >> BASE_CORRECT & 1) for w in words] == [True, False]  # the pack holds the same set
    assert all(w >> INJECTED_CORRECT & 1 for w in words)


def test_reading_a_store_with_two_base_sets_gives_the_first_jobs() -> None:
    from storage.gpu_jobs import JobResultRow

    def row(job: int, variant: str, predicted: str, target: str = "m") -> JobResultRow:
        return JobResultRow(job_id=job, target_model=target, strategy="cpt-lora", train_lang="en", question_id=11,
                            lang="en", variant=variant, scorer="option-loglik", split="test", predicted=predicted,
                            correct=predicted == "A")

    rows = [row(1, "base", "A"), row(1, "injected", "A"), row(2, "base", "B"), row(2, "injected", "C"),
            row(3, "base", "D", target="other")]
    got = [(r.job_id, r.variant, r.predicted, r.correct) for r in one_base_set(rows)]
    assert got == [(1, "base", "A", True), (1, "injected", "A", True), (2, "base", "A", True), (2, "injected", "C", False),
                   (3, "base", "D", False)]
