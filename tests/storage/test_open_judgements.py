"""The jury's verdicts in the store (`storage.open_judgements`, table `open_judgement`, issue 47 item 3), on SQLite and
PostgreSQL (`CLKT_TEST_PG_URL`): a store from before the table migrates up and back down; an answer's rows are
written all at once, a re-grade writes over them (one row per answer and judge), another jury's rows of the answer
go; what is pending follows the panel and the bound on passes; `judgements_for` reads each judge's vote and the
jury's, and rows go with their answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.engine import HEAD_REVISION, Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import Snapshot
from storage.open_judgements import (
    JURY,
    GradedAnswer,
    Judgement,
    judgements_for,
    jury_rows_for_snapshot,
    pending_answers,
    pending_by_snapshot,
    write_judgements,
)
from storage.open_results import OpenResultRecord, write_open_results
from tests.storage._revisions import migrate_store, store_at_revision
from tests.storage._urls import BACKENDS, empty_store_url

BEFORE = "e2b6f4a8c1d7"  # the revision before the jury's table
SID = "s1"
JUDGES = ("a:qwen2.5-7b", "b:llama-3-8b", "c:gemma-2-9b")


async def _answers(store: Store) -> list[int]:
    """A finished job of snapshot SID with three stored open answers; their ids."""
    async with store.transaction() as s:
        s.add(Snapshot(id=SID, spec="demo", period="2025-06"))
        await s.flush()
        await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)
        (job,) = await jobs_for_snapshot(s, SID)
        await write_open_results(s, job.id, [
            OpenResultRecord(open_qid=100 + q, entity_id=7, domain="movies", fact="film.director", lang="en",
                             variant="injected", scorer="open-normaliser", split="test", verdict="INCORRECT",
                             other_language=False, answer=f"answer {q}") for q in range(3)], entity_rows={})
        await s.execute(text("UPDATE gpu_job SET status = 'done'"))
    async with store.session() as s:
        return [int(i) for i in (await s.execute(text("SELECT id FROM open_result ORDER BY id"))).scalars()]


def _graded(answer: int, *, failed: bool = False, attempts: int = 1) -> GradedAnswer:
    votes = tuple(Judgement(judge=j, verdict=None if failed and i == 2 else "CORRECT", prompt_version="open_judge.v1",
                            error="timeout: slow" if failed and i == 2 else None, cost_usd=0.001, attempts=attempts)
                  for i, j in enumerate(JUDGES))
    jury = Judgement(judge=JURY, verdict="CORRECT", prompt_version="open_judge.v1", reason="2 of 3 judges",
                     error="1 of 3 votes failed" if failed else None, cost_usd=0.003, attempts=attempts)
    return GradedAnswer(open_result_id=answer, votes=votes, jury=jury)


@pytest.fixture(params=BACKENDS)
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = await empty_store_url(request.param, tmp_path / "clkt.db")
    await store_at_revision(url, BEFORE)  # a store of the version before
    return url


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    async with Store(url=url) as s:  # migrated to the head
        yield s


async def test_the_migration_goes_up_and_back_down(store: Store, url: str) -> None:
    async with store.session() as s:
        assert (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar() == HEAD_REVISION
        assert (await s.execute(text("SELECT count(*) FROM open_judgement"))).scalar() == 0
    await migrate_store(url, BEFORE, down=True)
    async with store.session() as s:
        assert (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar() == BEFORE
        with pytest.raises(Exception, match="open_judgement"):
            await s.execute(text("SELECT count(*) FROM open_judgement"))


async def test_rows_are_written_over_and_pending_follows_the_panel_and_the_bound(store: Store) -> None:
    ids = await _answers(store)
    async with store.session() as s:
        assert [p.open_result_id for p in await pending_answers(s, panel="p1", max_attempts=2, limit=10)] == ids
        assert [p.open_result_id for p in await pending_answers(s, panel="p1", max_attempts=2, limit=10,
                                                                after=ids[0])] == ids[1:]
    async with store.transaction() as s:
        assert await write_judgements(s, [_graded(ids[0]), _graded(ids[1], failed=True)], panel="p1") == 8
    async with store.session() as s:
        left = await pending_answers(s, panel="p1", max_attempts=2, limit=10)
        assert [(p.open_result_id, p.attempts) for p in left] == [(ids[1], 1), (ids[2], 0)]
        assert await pending_by_snapshot(s, panel="p1", max_attempts=2) == {SID: 2}
        assert await pending_by_snapshot(s, panel="p2", max_attempts=2) == {SID: 3}  # another jury grades it all
    async with store.transaction() as s:  # the retry: written over, one row per answer and judge
        await write_judgements(s, [_graded(ids[1], failed=True, attempts=2)], panel="p1")
    async with store.session() as s:
        assert [p.open_result_id for p in await pending_answers(s, panel="p1", max_attempts=2, limit=10)] == [ids[2]]
        got = await judgements_for(s, ids)
        n = (await s.execute(text("SELECT count(*) FROM open_judgement"))).scalar()
        rows = await jury_rows_for_snapshot(s, SID)
        every = await jury_rows_for_snapshot(s, SID, votes=True)
    assert n == 8 and set(got) == {ids[0], ids[1]}
    second = got[ids[1]]
    assert second.jury is not None and second.jury.attempts == 2 and second.jury.error == "1 of 3 votes failed"
    assert set(second.votes) == set(JUDGES) and second.votes[JUDGES[2]].verdict is None
    assert second.votes[JUDGES[2]].error == "timeout: slow"
    assert [(r.open_qid, r.verdict, r.failed) for r in rows] == [(100, "CORRECT", False), (101, "CORRECT", True)]
    assert sum(r.cost_usd for r in rows) == pytest.approx(0.006) and {r.judge for r in rows} == {JURY}
    assert len(every) == 8 and [(r.judge, r.verdict) for r in every if r.failed and r.judge != JURY] == [(JUDGES[2], None)]


async def test_another_panel_replaces_the_answers_rows_and_rows_go_with_their_answer(store: Store) -> None:
    ids = await _answers(store)
    async with store.transaction() as s:
        await write_judgements(s, [_graded(i) for i in ids], panel="p1")
    only_two = GradedAnswer(open_result_id=ids[0], votes=_graded(ids[0]).votes[:2], jury=_graded(ids[0]).jury)
    async with store.transaction() as s:
        await write_judgements(s, [only_two], panel="p2")
    async with store.session() as s:
        got = await judgements_for(s, [ids[0]])
        panels = (await s.execute(text("SELECT DISTINCT panel FROM open_judgement WHERE open_result_id = :i"),
                                  {"i": ids[0]})).scalars().all()
    assert set(got[ids[0]].votes) == set(JUDGES[:2]) and list(panels) == ["p2"]  # no vote of the former jury left
    async with store.transaction() as s:
        await s.execute(text("DELETE FROM open_result WHERE id = :i"), {"i": ids[1]})
    async with store.session() as s:
        assert ids[1] not in await judgements_for(s, ids)
