"""The store owner: migrations from empty, pragmas, refusing corrupt or foreign files, lifecycle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from clkt.errors import ForeignDatabaseError, UserError
from storage.engine import Store


async def test_migrations_from_empty_create_every_table(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'new' / 'clkt.db'}"
    async with Store(url=url) as store, store.session() as s:
        names = {r[0] for r in (await s.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))).all()}
        mode = (await s.execute(text("PRAGMA journal_mode"))).scalar()
        fk = (await s.execute(text("PRAGMA foreign_keys"))).scalar()
        busy = (await s.execute(text("PRAGMA busy_timeout"))).scalar()
    assert {"entity", "document", "task", "probe", "question", "verification", "translation", "snapshot",
            "snapshot_item", "gpu_job", "question_result", "llm_call", "source_cursor", "alembic_version"} <= names
    assert mode == "wal" and fk == 1 and busy >= 1000
    # a second start is a no-op
    async with Store(url=url):
        pass


async def test_corrupt_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "clkt.db"
    junk = b"this is not a database at all" * 100
    path.write_bytes(junk)
    with pytest.raises(ForeignDatabaseError, match=str(path)):
        await Store(url=f"sqlite+aiosqlite:///{path}").initialize()
    assert path.read_bytes() == junk


async def test_foreign_sqlite_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO customers VALUES (1, 'ada')")
    con.commit()
    con.close()
    before = path.read_bytes()
    store = Store(url=f"sqlite+aiosqlite:///{path}")
    with pytest.raises(ForeignDatabaseError, match="belongs to something else"):
        await store.initialize()
    await store.close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall() == [("customers",)]
    con.close()
    assert len(path.read_bytes()) == len(before)


async def test_unknown_migration_revision_is_refused(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'c.db'}"
    async with Store(url=url):
        pass
    con = sqlite3.connect(tmp_path / "c.db")
    con.execute("UPDATE alembic_version SET version_num='ffffffffffff'")
    con.commit()
    con.close()
    with pytest.raises(ForeignDatabaseError, match="unknown to this"):
        await Store(url=url).initialize()


async def test_store_refuses_to_reopen_and_needs_one_of_url_engine(tmp_path: Path) -> None:
    store = Store(url=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    await store.initialize()
    await store.close()
    with pytest.raises(UserError):
        await store.initialize()
    with pytest.raises(UserError):
        Store()


async def test_migrations_match_the_models(tmp_path: Path) -> None:
    """A model change without its migration fails here (alembic autogenerate finds nothing to do)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'm.db'}") as store, store.engine.connect() as conn:
        diff = await conn.run_sync(
            lambda c: compare_metadata(MigrationContext.configure(c, opts={"compare_type": False}), SQLModel.metadata)
        )
    assert diff == []


_KILLED_MID_MIGRATION = """
import asyncio, os, sys
from sqlalchemy import event
from storage.engine import Store

store = Store(url=sys.argv[1])
created = []

@event.listens_for(store.engine.sync_engine, "after_cursor_execute")
def die_after_some_tables(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith("CREATE TABLE"):
        created.append(statement)
        if len(created) == 3:  # three tables written, the rest not: the process dies like kill -9
            os._exit(9)

asyncio.run(store.initialize())
"""


async def test_a_process_killed_mid_migration_leaves_no_half_schema(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    db = tmp_path / "clkt.db"
    url = f"sqlite+aiosqlite:///{db}"
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-c", _KILLED_MID_MIGRATION, url], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert res.returncode == 9, res.stderr
    con = sqlite3.connect(db)
    try:
        left = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    finally:
        con.close()
    assert left == []  # the killed migration's tables were never committed
    async with Store(url=url) as store, store.session() as s:  # the next start migrates from scratch
        names = {r[0] for r in (await s.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))).all()}
    assert {"entity", "task", "daemon_lock", "alembic_version"} <= names


def test_head_revision_is_the_newest_migration() -> None:
    """`HEAD_REVISION` is what the scripts say is the head: a new migration that forgets to update it fails here."""
    from alembic.script import ScriptDirectory

    from storage.engine import HEAD_REVISION, _alembic_config

    assert ScriptDirectory.from_config(_alembic_config()).get_heads() == [HEAD_REVISION]


_OPEN_AT_HEAD = """
import asyncio, sys
from storage.engine import Store
asyncio.run(Store(url=sys.argv[1]).__aenter__())
print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))
"""


async def test_a_store_at_head_opens_without_the_migration_scripts(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    async with Store(url=url):  # created and migrated
        pass
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-c", _OPEN_AT_HEAD, url], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"  # alembic never imported: one read of alembic_version decided it


async def test_a_store_one_migration_behind_is_upgraded_to_head(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory

    from storage.engine import HEAD_REVISION, _alembic_config
    from tests.storage._revisions import store_at_revision

    async def schema(url: str) -> tuple[str | None, set[tuple[str, str]]]:
        async with Store(url=url) as store, store.session() as s:
            rev = (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar()
            rows = (await s.execute(text("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))).all()
        return rev, {(t, n) for t, n in rows}

    previous = ScriptDirectory.from_config(_alembic_config()).get_revision(HEAD_REVISION).down_revision
    assert isinstance(previous, str)
    behind = f"sqlite+aiosqlite:///{tmp_path / 'behind.db'}"
    await store_at_revision(behind, previous)  # what the version before the head migration wrote
    rev, upgraded = await schema(behind)
    _, fresh = await schema(f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}")
    assert rev == HEAD_REVISION and upgraded == fresh  # every table, index and view of a store made at the head
