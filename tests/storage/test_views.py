"""The SQL views are a public interface (CHANGELOG.md, "SQL views"; docs/reference/sql-views.md): their columns are exactly the documented ones, in
order, and their rows say what the product computes: `v_pair_results` equals `clkt.report.metrics` on a fixture
store, `v_snapshot_questions` equals a built snapshot's files, `v_fresh_entities` the gate's rule,
`v_snapshot_targets` the validity rows. On SQLite, and on PostgreSQL when CLKT_TEST_PG_URL is set."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from clkt.config import TargetSettings
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.writer import load_report_data
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.layout import load_snapshot_dir
from storage.engine import Store
from storage.enums import SnapshotTargetStatus
from storage.targets import TargetIdentity, record_snapshot_target, sync_targets
from tests.conftest import REPO
from tests.report._store import SNAPSHOT_ID, seed_report_store
from tests.roster._flow import build_june
from tests.storage._urls import BACKENDS, empty_store_url

PUBLIC_IDS = "584e9e4ac56b"  # the migration that gave snapshot_item and the views public ids
VIEWS = (
    "v_fresh_entities", "v_snapshot_questions", "v_job_results", "v_pair_results", "v_snapshot_targets",
    "v_entity_accounting",
)


# The public contract (CHANGELOG.md, "SQL views"): each view's columns in order. A column may be added (here and
# in a migration), never renamed or dropped; docs/reference/sql-views.md shows them as a migrated store has them.
CONTRACT: dict[str, list[str]] = {
    "v_fresh_entities": ["entity_id", "source", "external_id", "domain", "name", "occurred_at", "status",
                         "status_reason", "discovered_at"],
    "v_snapshot_questions": ["snapshot_id", "qid", "lang", "entity_id", "spec", "period", "domain", "split",
                             "question", "option_a", "option_b", "option_c", "option_d", "answer_letter",
                             "snapshot_status", "slot", "source", "external_id", "store_question_id",
                             "store_entity_id"],
    "v_job_results": ["job_id", "snapshot_id", "qid", "lang", "target", "strategy", "train_lang", "variant", "scorer",
                      "split", "predicted", "correct", "entity_id", "store_question_id", "store_entity_id"],
    "v_pair_results": ["job_id", "snapshot_id", "target", "strategy", "scorer", "train_lang", "test_lang", "a", "b",
                       "c", "d", "n", "overall", "transfer"],
    "v_snapshot_targets": ["snapshot_id", "target", "status", "entities", "excluded", "valid", "spec", "period",
                           "updated_at"],
    "v_entity_accounting": ["entity_id", "source", "external_id", "domain", "occurred_at", "month", "status", "spec",
                            "snapshot_id", "snapshot_period", "own_period", "state", "reason"],
}


def documented() -> dict[str, list[str]]:
    """The views' columns as the reference page (generated from a migrated store) shows them: view -> columns."""
    page = (REPO / "docs" / "reference" / "sql-views.md").read_text(encoding="utf-8")
    out: dict[str, list[str]] = {}
    for line in page.splitlines():  # its table: | `view` | `col`, `col`, ... | one row per |
        m = re.match(r"^\| `(v_\w+)` \| (.+?) \| .+ \|$", line)
        if m:
            out[m.group(1)] = re.findall(r"`(\w+)`", m.group(2))
    return out


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = await empty_store_url(request.param, tmp_path / 'data' / 'clkt.db')
    async with Store(url=url) as store:
        yield store


async def _rows(store: Store, sql: str, **params: Any) -> list[dict[str, Any]]:
    async with store.session() as s:
        return [dict(r._mapping) for r in (await s.execute(text(sql), params)).all()]


async def test_the_views_columns_are_the_contracts_and_the_pages(any_store: Store) -> None:
    assert sorted(CONTRACT) == sorted(VIEWS)

    def columns(sync_conn: Any) -> dict[str, list[str]]:
        insp = inspect(sync_conn)
        return {v: [c["name"] for c in insp.get_columns(v)] for v in VIEWS}

    async with any_store.engine.connect() as conn:
        got = await conn.run_sync(columns)
    assert got == CONTRACT
    assert documented() == CONTRACT  # the committed reference page shows them (tests/docs keeps it regenerated)


async def test_pair_results_are_the_reports_contingency(any_store: Store) -> None:
    await seed_report_store(any_store)
    data = await load_report_data(any_store, SNAPSHOT_ID)
    want = {
        (p.model, p.strategy, p.scorer, p.train_lang, p.test_lang): (p.table.a, p.table.b, p.table.c, p.table.d, p.overall, p.transfer)
        for p in data.pairs if p.domain == ALL_DOMAINS and not p.missing
    }
    rows = await _rows(any_store, "SELECT * FROM v_pair_results WHERE snapshot_id = :s", s=SNAPSHOT_ID)
    got = {
        (r["target"], r["strategy"], r["scorer"], r["train_lang"], r["test_lang"]): (r["a"], r["b"], r["c"], r["d"], r["overall"], r["transfer"])
        for r in rows
    }
    assert want and got.keys() == want.keys()
    for k, (a, b, c, d, overall, transfer) in want.items():
        ga, gb, gc, gd, go, gt = got[k]
        assert (ga, gb, gc, gd) == (a, b, c, d), k
        assert go == pytest.approx(overall) and (gt is None if transfer is None else gt == pytest.approx(transfer)), k
        assert next(r["n"] for r in rows if (r["target"], r["strategy"], r["scorer"], r["train_lang"], r["test_lang"]) == k) == a + b + c + d
    results = await _rows(any_store, "SELECT count(*) AS n FROM v_job_results WHERE snapshot_id = :s", s=SNAPSHOT_ID)
    async with any_store.session() as s:
        stored = (await s.execute(text("SELECT count(*) FROM question_result"))).scalar_one()
    assert results[0]["n"] == stored > 0


async def test_snapshot_questions_are_the_snapshots_files(any_store: Store, tmp_path: Path) -> None:
    _, res = await build_june(any_store, tmp_path)
    assert res.snapshot_id is not None and res.path is not None
    files = load_snapshot_dir(res.path)
    async with any_store.session() as s:
        public = {it.question_row: (it.qid, it.entity_id) for it in await load_item_refs(s, res.snapshot_id)}
    rows = await _rows(any_store, "SELECT * FROM v_snapshot_questions WHERE snapshot_id = :s", s=res.snapshot_id)
    # the public ids, as in the files; the store's rows ride along
    assert all(public[r["store_question_id"]] == (r["qid"], r["entity_id"]) for r in rows)
    got = {(r["qid"], r["lang"]): (r["question"], [r["option_a"], r["option_b"], r["option_c"], r["option_d"]],
                                   r["answer_letter"], r["split"], r["domain"]) for r in rows}
    want = {(q.qid, q.lang): (q.question, q.options, q.answer, q.split, q.domain) for lang in files.languages
            for q in files.questions_for(lang)}
    assert len(rows) == len(got) and got == want
    assert {r["spec"] for r in rows} == {"demo"} and {r["period"] for r in rows} == {"2025-06"}
    assert {r["snapshot_status"] for r in rows} == {"frozen"}
    answers = await _rows(any_store, "SELECT qid, store_question_id FROM v_job_results WHERE snapshot_id = :s",
                          s=res.snapshot_id)
    assert all(public[r["store_question_id"]][0] == r["qid"] for r in answers)

    vt = await _rows(any_store, "SELECT * FROM v_snapshot_targets")
    assert [(r["snapshot_id"], r["target"], r["status"], r["entities"], r["excluded"], r["valid"]) for r in vt] == [
        (res.snapshot_id, "gemma-3-270m", "ready", 8, 0, 8)]
    async with any_store.transaction() as s:
        await record_snapshot_target(s, snapshot_id=res.snapshot_id, target="late", status=SnapshotTargetStatus.probing,
                                     entities=8)
        await record_snapshot_target(s, snapshot_id=res.snapshot_id, target="later", status=SnapshotTargetStatus.ready,
                                     entities=8, excluded=3)
    vt = {r["target"]: (r["status"], r["valid"]) for r in await _rows(any_store, "SELECT * FROM v_snapshot_targets")}
    assert vt == {"gemma-3-270m": ("ready", 8), "late": ("probing", 0), "later": ("ready", 5)}


async def test_fresh_entities_passed_the_gate_for_every_current_target(any_store: Store, tmp_path: Path) -> None:
    from clkt.roster import fresh_from
    from tests.snapshots.factories import add_ready_entity

    old = await add_ready_entity(any_store, domain="music", source="deezer", external_id="old",
                                 occurred_at=datetime(2025, 2, 1, tzinfo=UTC))
    mid = await add_ready_entity(any_store, domain="music", source="deezer", external_id="mid",
                                 occurred_at=datetime(2025, 5, 3, tzinfo=UTC))
    assert await _rows(any_store, "SELECT * FROM v_fresh_entities") == []  # no target recorded yet
    a = TargetSettings(name="a", model="m-a", cutoff=date(2024, 8, 1))  # fresh from 2025-01-31 (+183 days)
    b = TargetSettings(name="b", model="m-b", cutoff=date(2024, 11, 1))  # fresh from 2025-05-03
    ident = [TargetIdentity(name=t.name, model=t.model, kind=t.kind, cutoff=t.cutoff, fresh_from=fresh_from(t, 183))
             for t in (a, b)]
    async with any_store.transaction() as s:
        await sync_targets(s, ident[:1])
    fresh = await _rows(any_store, "SELECT entity_id, status FROM v_fresh_entities ORDER BY entity_id")
    assert [(r["entity_id"], r["status"]) for r in fresh] == [(old, "ready"), (mid, "ready")]
    async with any_store.transaction() as s:
        await sync_targets(s, ident)  # b joins: `old` is too old for it
    assert [r["entity_id"] for r in await _rows(any_store, "SELECT entity_id FROM v_fresh_entities")] == [mid]
    async with any_store.transaction() as s:
        await sync_targets(s, ident[1:])  # a leaves: only the current targets count
    assert [r["entity_id"] for r in await _rows(any_store, "SELECT entity_id FROM v_fresh_entities")] == [mid]


async def test_the_views_survive_a_batch_migration_that_recreates_a_table_they_read(tmp_path: Path) -> None:
    """A later migration that recreates a table on SQLite (alembic's "move and copy") must not trip over the views
    (the migration environment turns SQLite's legacy rename rule on for it)."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    async with Store(url=url) as store:
        await seed_report_store(store)
        async with store.transaction() as s:
            await record_snapshot_target(s, snapshot_id=SNAPSHOT_ID, target="t", status=SnapshotTargetStatus.ready,
                                         entities=24, excluded=4)

        def recreate(sync_conn: Any) -> None:
            sync_conn.exec_driver_sql("PRAGMA legacy_alter_table = ON")  # what storage/migrations/env.py does
            ops = Operations(MigrationContext.configure(sync_conn))
            with ops.batch_alter_table("snapshot_target", recreate="always") as batch:
                batch.alter_column("excluded", existing_nullable=False)
            sync_conn.exec_driver_sql("PRAGMA legacy_alter_table = OFF")

        async with store.engine.begin() as conn:
            await conn.run_sync(recreate)
        rows = await _rows(store, "SELECT target, valid FROM v_snapshot_targets")
    assert [(r["target"], r["valid"]) for r in rows] == [("t", 20)]
    env = (REPO / "storage" / "migrations" / "env.py").read_text(encoding="utf-8")
    assert "PRAGMA legacy_alter_table = ON" in env


async def test_the_migration_goes_down_and_up_again(any_store: Store) -> None:
    from alembic import command

    from storage.engine import _alembic_config

    def names(sync_conn: Any) -> tuple[set[str], set[str]]:
        insp = inspect(sync_conn)
        return set(insp.get_view_names()), {c["name"] for c in insp.get_columns("target")}

    def down(sync_conn: Any) -> None:
        command.downgrade(_alembic_config(sync_conn), "127a2ea0d68e")

    def up(sync_conn: Any) -> None:
        command.upgrade(_alembic_config(sync_conn), "head")

    async with any_store.engine.begin() as conn:
        views, cols = await conn.run_sync(names)
        assert set(VIEWS) <= views and "fresh_from" in cols
        await conn.run_sync(down)
        views, cols = await conn.run_sync(names)
        assert not set(VIEWS) & views and "fresh_from" not in cols
        await conn.run_sync(up)
        views, cols = await conn.run_sync(names)
    assert set(VIEWS) <= views and "fresh_from" in cols


async def test_the_migration_fills_the_public_ids_of_existing_items(tmp_path: Path) -> None:
    """A store frozen before `snapshot_item` had public ids gets them from each question's identity on upgrade."""
    from alembic.script import ScriptDirectory

    from storage.engine import _alembic_config
    from tests.storage._revisions import migrate_store

    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    async with Store(url=url) as store:
        _, res = await build_june(store, tmp_path)
        assert res.snapshot_id is not None
        async with store.session() as s:
            public = {it.question_row: (it.qid, it.entity_id) for it in await load_item_refs(s, res.snapshot_id)}
    before = ScriptDirectory.from_config(_alembic_config()).get_revision(PUBLIC_IDS).down_revision
    assert isinstance(before, str)
    await migrate_store(url, before, down=True)  # the store as the version before public ids left it
    async with Store(url=url) as store:
        rows = await _rows(store, "SELECT qid, entity_id, store_question_id FROM v_snapshot_questions")
    assert rows and all(public[r["store_question_id"]] == (r["qid"], r["entity_id"]) for r in rows)
