"""A job's identity carries its training seed (`spec.seeds`, issue 35 item 1): one job per seed, enqueued once;
a store written before seeds migrates with its jobs as seed 0 and keeps every result."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from clkt.config import GpuSettings
from clkt.config.spec import training_seed
from clkt.inject.spec_builder import job_gpu
from clkt.layout import job_dir
from storage.engine import HEAD_REVISION, Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, jobs_for_snapshot, results_for_snapshot, write_job_results
from storage.models import Entity, Question, Snapshot
from tests.storage._revisions import migrate_store, store_at_revision
from tests.storage._urls import BACKENDS, empty_store_url

BEFORE = "a5d2f81c3e47"  # the revision before seeds
SID = "s1"
WHEN = datetime(2025, 6, 1, tzinfo=UTC)


async def _snapshot_with_questions(store: Store) -> None:
    async with store.transaction() as s:
        s.add(Snapshot(id=SID, spec="demo", period="2025-06"))
        for e in (1, 2):
            s.add(Entity(id=e, source="fixture", external_id=str(e), domain="movies", name=f"e{e}", occurred_at=WHEN,
                         content_hash="x"))
        await s.flush()
        for e in (1, 2):
            s.add(Question(id=10 + e, entity_id=e, slot="s", lang="en", question="q?", options=["a", "b", "c", "d"],
                           answer_index=0, evidence="x", generator="fixture", prompt_version="v1"))


def _records() -> list[ResultRecord]:
    return [ResultRecord(question_id=q, lang=lang, variant=v, scorer="option-loglik", split="test", predicted="A",
                         correct=q == 11) for q in (11, 12) for lang in ("en", "fr") for v in ("base", "injected")]


async def test_enqueue_makes_one_job_per_seed_once(store: Store) -> None:
    await _snapshot_with_questions(store)
    async with store.transaction() as s:
        n = await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=["en", "fr"],
                                   max_attempts=1, seeds=[0, 1, 2])
        again = await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"],
                                       train_langs=["en", "fr"], max_attempts=1, seeds=[0, 1, 2])
        more = await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"],
                                      train_langs=["en"], max_attempts=1, seeds=[0, 3])  # a seed added later
    async with store.session() as s:
        jobs = await jobs_for_snapshot(s, SID)
    assert (n, again, more) == (6, 0, 1)
    assert sorted((j.train_lang, j.seed) for j in jobs) == sorted(
        [(lang, seed) for lang in ("en", "fr") for seed in (0, 1, 2)] + [("en", 3)])


async def test_each_seed_trains_with_its_own_seed_in_its_own_folder(store: Store, tmp_path: Path) -> None:
    await _snapshot_with_questions(store)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1, seeds=[0, 5], config=GpuSettings(seed=7, epochs=2))
    async with store.session() as s:
        zero, five = sorted(await jobs_for_snapshot(s, SID), key=lambda j: j.seed)
    consumer = GpuSettings(seed=100)
    assert job_gpu(zero, consumer).seed == 7  # seed 0: the job's `[gpu] seed`, as before seeds
    assert job_gpu(five, consumer).seed == training_seed(7, 5) == 12 and job_gpu(five, consumer).epochs == 2
    assert job_dir(tmp_path, zero.id) != job_dir(tmp_path, five.id)  # every job has a folder of its own (its id)
    assert job_dir(tmp_path, zero.id) == tmp_path / "jobs" / str(zero.id)  # seed 0 keeps today's path
    async with store.transaction() as s:
        await write_job_results(s, five.id, _records())
        rows = await results_for_snapshot(s, SID, done_only=False)
    assert {r.seed for r in rows} == {5}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_store_from_before_seeds_migrates_its_jobs_as_seed_0_and_keeps_their_results(
    tmp_path: Path, backend: str,
) -> None:
    url = await empty_store_url(backend, tmp_path / "clkt.db")
    await store_at_revision(url, BEFORE)
    async with Store(url=url, migrate=False) as store:
        await _snapshot_with_questions(store)
        async with store.transaction() as s:
            await s.execute(text(
                "INSERT INTO gpu_job (snapshot_id, target_model, strategy, train_lang, config, status, attempts, "
                "max_attempts, not_before, summary, created_at, updated_at) VALUES (:sid, 'm', 'cpt-lora', 'en', "
                "'{}', 'done', 1, 1, '2025-06-01 00:00:00', '{}', '2025-06-01 00:00:00', '2025-06-01 00:00:00')"),
                {"sid": SID})
            old_id = (await s.execute(text("SELECT id FROM gpu_job"))).scalar_one()
            await write_job_results(s, old_id, _records())
    async with Store(url=url) as store:  # migrates (on SQLite with foreign keys on: the old table's drop cascades)
        async with store.session() as s:
            rev = (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar()
            packs = (await s.execute(text("SELECT count(*) FROM result_pack WHERE job_id = :j"), {"j": old_id})).scalar()
            (job,) = await jobs_for_snapshot(s, SID)
            rows = await results_for_snapshot(s, SID)
        async with store.transaction() as s:  # a second seed of the same job is a new job; seed 0 is the old one
            new = await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                                         max_attempts=1, seeds=[0, 1])
    assert rev == HEAD_REVISION and job.seed == 0 and job.id == old_id and new == 1
    assert len(rows) == len(_records()) and {r.seed for r in rows} == {0} and packs == 1
    await migrate_store(url, BEFORE, down=True)  # the way back drops the seeds that version has no room for
    async with Store(url=url, migrate=False) as store, store.session() as s:
        left = (await s.execute(text("SELECT id FROM gpu_job"))).scalars().all()
        results = (await s.execute(text("SELECT count(*) FROM question_result"))).scalar()
    assert list(left) == [old_id] and results == len(_records())


async def test_published_files_of_two_seeds_do_not_collide(store: Store) -> None:
    from clkt.publish.tree import job_key

    await _snapshot_with_questions(store)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1, seeds=[0, 2])
    async with store.session() as s:
        zero, two = sorted(await jobs_for_snapshot(s, SID), key=lambda j: j.seed)
    assert job_key(zero) == "m__cpt-lora__en"  # seed 0: the name it always had
    assert job_key(two) == "m__cpt-lora__en__seed2"
    from storage.status_pages import gpu_jobs

    async with store.session() as s:
        assert sorted(j.seed for j in await gpu_jobs(s)) == [0, 2]  # the status page's job list says the seed


async def test_the_spec_enqueues_every_seed_of_spec_seeds(store: Store) -> None:
    from clkt.config import SpecSettings
    from clkt.snapshots.service import enqueue_spec_jobs

    await _snapshot_with_questions(store)
    spec = SpecSettings(languages=["en", "fr"], train_languages=["en"], seeds=[0, 4, 9])
    async with store.transaction() as s:
        first = await enqueue_spec_jobs(s, SID, spec=spec, gpu=GpuSettings())
        again = await enqueue_spec_jobs(s, SID, spec=spec, gpu=GpuSettings())
    async with store.session() as s:
        jobs = await jobs_for_snapshot(s, SID)
    assert (first, again) == (3, 0)
    assert sorted(j.seed for j in jobs) == [0, 4, 9] and {j.train_lang for j in jobs} == {"en"}
