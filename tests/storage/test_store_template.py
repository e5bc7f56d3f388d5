"""The tests' migrated-once schema (`tests/store_template.py`) is alembic's: a store it builds and a store the
migrations build hold the same tables, indexes, views and migration history, and a store that is not empty still
gets the real migrations."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text

from storage import engine
from storage.engine import HEAD_REVISION, Store
from tests.conftest import _REAL_UPGRADE
from tests.store_template import migrated_schema, replaying_upgrade, schema_of


async def test_a_new_store_gets_the_schema_alembic_makes(tmp_path: Path) -> None:
    schema = migrated_schema(tmp_path / "template.db", real=_REAL_UPGRADE)
    assert engine._upgrade is not _REAL_UPGRADE  # this test's stores are replayed (tests/conftest.py)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'replayed.db'}") as store, store.session() as s:
        assert (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar() == HEAD_REVISION
    replayed, migrated = schema_of(tmp_path / "replayed.db"), schema_of(tmp_path / "template.db")  # alembic's
    assert replayed == migrated
    assert {kind for kind, *_ in migrated} >= {"table", "index", "view", "version"}
    assert any(s.startswith("CREATE VIEW") for s in schema)


def test_a_store_that_is_not_empty_gets_the_real_migrations(tmp_path: Path) -> None:
    ran: list[str] = []
    upgrade = replaying_upgrade((), lambda conn: ran.append(conn.dialect.name))
    sync = create_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with sync.begin() as conn:
        upgrade(conn)  # empty: the (here empty) schema, no migration
        assert ran == []
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        upgrade(conn)
    sync.dispose()
    assert ran == ["sqlite"]
