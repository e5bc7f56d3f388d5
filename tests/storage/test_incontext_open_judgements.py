"""The jury's verdicts on the in-context short answers in the store (`storage.incontext_open_judgements`, table
`incontext_open_judgement`), on SQLite and PostgreSQL (`CLKT_TEST_PG_URL`): a store from before the table migrates up
and back down; a re-grade writes over an answer's rows, another jury's rows go; pending follows the panel, the
bound, the cursor and the status (a skipped prompt is never pending); rows go with their answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.engine import HEAD_REVISION, Store
from storage.incontext_open import InContextOpenRecord, add_incontext_open
from storage.incontext_open_judgements import (
    InContextGraded,
    InContextPending,
    incontext_jury_rows,
    pending_incontext,
    pending_incontext_by_snapshot,
    write_incontext_judgements,
)
from storage.models import Snapshot
from storage.open_judgements import JURY, Judgement
from tests.storage._revisions import migrate_store, store_at_revision
from tests.storage._urls import BACKENDS, empty_store_url

BEFORE = "c8e2a4f6b9d3"  # the revision before the table
SID = "s1"


def _rec(q: int, c: str, *, status: str = "answered") -> InContextOpenRecord:
    return InContextOpenRecord(snapshot_id=SID, target="t", open_qid=q, entity_id=7, context_lang=c, lang="en",
                               status=status, verdict="CORRECT" if status == "answered" else "", answer=f"a{q}{c}")


async def _answers(store: Store) -> None:
    async with store.transaction() as s:
        s.add(Snapshot(id=SID, spec="demo", period="2025-06"))
        await s.flush()
        await add_incontext_open(s, [_rec(1, ""), _rec(1, "en"), _rec(2, "en"), _rec(3, "en", status="skipped")])


def _graded(a: InContextPending, *, failed: bool = False, panel_version: str = "open_judge.v1") -> InContextGraded:
    vote = Judgement(judge="a:m", verdict=None if failed else "CORRECT", prompt_version=panel_version,
                     error="http: 500" if failed else None, cost_usd=0.002, attempts=a.attempts + 1)
    jury = Judgement(judge=JURY, verdict=None if failed else "CORRECT", prompt_version=panel_version,
                     error="1 of 1 votes failed" if failed else None, cost_usd=0.002, attempts=a.attempts + 1)
    return a.graded((vote,), jury)


@pytest.fixture(params=BACKENDS)
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = await empty_store_url(request.param, tmp_path / "clkt.db")
    await store_at_revision(url, BEFORE)
    return url


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    async with Store(url=url) as s:
        yield s


async def test_the_incontext_jury_migration_goes_up_and_back_down(store: Store, url: str) -> None:
    async with store.session() as s:
        assert (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar() == HEAD_REVISION
        assert (await s.execute(text("SELECT count(*) FROM incontext_open_judgement"))).scalar() == 0
    await migrate_store(url, BEFORE, down=True)
    async with store.session() as s:
        assert (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar() == BEFORE
        with pytest.raises(Exception, match="incontext_open_judgement"):
            await s.execute(text("SELECT count(*) FROM incontext_open_judgement"))


async def test_pending_follows_panel_bound_cursor_and_status_and_rows_go_with_their_answer(store: Store) -> None:
    await _answers(store)
    async with store.session() as s:
        todo = await pending_incontext(s, panel="p1", max_attempts=2, limit=10)
        assert [a.key for a in todo] == [(SID, "t", 1, "", "en"), (SID, "t", 1, "en", "en"), (SID, "t", 2, "en", "en")]
        assert [a.key for a in await pending_incontext(s, panel="p1", max_attempts=2, limit=1, after=todo[0].key)] == [todo[1].key]
    async with store.transaction() as s:
        n = await write_incontext_judgements(s, [_graded(todo[0]), _graded(todo[1], failed=True)], panel="p1")
        assert n == 4
    async with store.session() as s:
        left = await pending_incontext(s, panel="p1", max_attempts=2, limit=10)
        assert [(a.key, a.attempts) for a in left] == [(todo[1].key, 1), (todo[2].key, 0)]
        assert await pending_incontext_by_snapshot(s, panel="p1", max_attempts=1) == {SID: 1}
        assert len(await pending_incontext(s, panel="p2", max_attempts=2, limit=10)) == 3  # another jury: everything
    async with store.transaction() as s:  # a re-grade writes over; another panel's rows of the answer go
        await write_incontext_judgements(s, [_graded(left[0])], panel="p1")
        await write_incontext_judgements(s, [_graded(todo[0])], panel="p2")
    async with store.session() as s:
        rows = await incontext_jury_rows(s, SID)
        assert [(r.open_qid, r.context_lang, r.verdict, r.decided) for r in rows] == [(1, "", "CORRECT", True),
                                                                                  (1, "en", "CORRECT", True)]
        panels = (await s.execute(text("SELECT panel, count(*) FROM incontext_open_judgement GROUP BY panel ORDER BY panel"))).all()
        assert [tuple(p) for p in panels] == [("p1", 2), ("p2", 2)]
    async with store.transaction() as s:
        await s.execute(text("DELETE FROM incontext_open_answer WHERE open_qid = 1 AND context_lang = ''"))
    async with store.session() as s:
        assert (await s.execute(text("SELECT count(*) FROM incontext_open_judgement"))).scalar() == 2
