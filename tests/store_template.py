"""A migrated schema, replayed: alembic migrates one template store per test session (per xdist worker) and a new
SQLite store of a test gets the template's schema as SQL statements (a few milliseconds) instead of the nine
migrations (a tenth of a second to half a second each time on a busy core). `tests/conftest.py` installs it for
every test but those that test the migrations themselves; `tests/storage/test_store_template.py` holds the
replayed schema equal to alembic's, table by table, index by index, view by view."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

from storage import engine

__all__ = ["migrated_schema", "replaying_upgrade", "schema_of"]

_SKIP = ("BEGIN TRANSACTION", "COMMIT", "PRAGMA")  # iterdump's framing: the caller's transaction is the frame


def migrated_schema(path: Path, *, real: Callable[[Any], None] = engine._upgrade) -> tuple[str, ...]:
    """The statements that rebuild a store alembic migrated from empty at `path` (created here) by `real` (the
    product's `storage.engine._upgrade`): its tables, indexes, views and rows (the migration history's one row)."""
    sync = create_engine(f"sqlite:///{path}")
    try:
        with sync.begin() as conn:
            real(conn)  # the real migrations, as `Store.initialize` runs them
    finally:
        sync.dispose()
    con = sqlite3.connect(path)
    try:
        return tuple(s for s in con.iterdump() if not s.startswith(_SKIP))
    finally:
        con.close()


def replaying_upgrade(schema: tuple[str, ...], real: Callable[[Any], None]) -> Callable[[Any], None]:
    """`storage.engine._upgrade` for tests: an empty SQLite store gets `schema`; any other store (PostgreSQL, a
    store partly migrated or behind) gets the `real` migrations."""

    def upgrade(sync_conn: Any) -> None:
        if sync_conn.dialect.name != "sqlite" or sync_conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
            real(sync_conn)
            return
        for statement in schema:
            sync_conn.exec_driver_sql(statement)

    return upgrade


def schema_of(path: Path) -> list[tuple[str, str, str, str]]:
    """Every (type, name, table, sql) of a SQLite file's `sqlite_master`, in a stable order, and its rows of
    `alembic_version`: what two stores must share to be the same schema."""
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
        versions = con.execute("SELECT 'version', version_num, '', '' FROM alembic_version ORDER BY version_num")
        return [*rows.fetchall(), *versions.fetchall()]
    finally:
        con.close()
