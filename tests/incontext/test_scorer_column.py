"""The in-context answers' `scorer` column: a store from before it migrates with every stored answer `generate`
(the only scorer the track had), and migrates back down without losing them."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from storage.engine import HEAD_REVISION, Store
from storage.incontext import incontext_answers
from tests.storage._revisions import migrate_store, store_at_revision

_BEFORE = "c8e2a4f6b913"


async def test_a_store_from_before_the_scorer_column_migrates_with_generate(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    await store_at_revision(url, _BEFORE)
    async with Store(url=url, migrate=False) as old, old.transaction() as s:
        await s.execute(text(
            "INSERT INTO incontext_answer (snapshot_id, target, qid, context_lang, lang, entity_id, status, letter, "
            "correct, truncated, input_tokens, output_tokens, cost_usd, created_at) VALUES ('s1', 't', 7, 'en', 'fr', "
            "3, 'unparsed', NULL, 0, 0, 120, 8, 0.0, '2026-12-03 00:00:00')"))
    async with Store(url=url) as store, store.session() as s:
        rev = (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        [row] = await incontext_answers(s, "s1")
    assert rev == HEAD_REVISION and row.scorer == "generate" and row.status == "unparsed" and row.qid == 7
    await migrate_store(url, _BEFORE, down=True)
    async with Store(url=url, migrate=False) as store, store.session() as s:
        assert (await s.execute(text("SELECT count(*) FROM incontext_answer"))).scalar() == 1
        cols = [r[1] for r in (await s.execute(text("PRAGMA table_info(incontext_answer)"))).all()]
    assert "scorer" not in cols
