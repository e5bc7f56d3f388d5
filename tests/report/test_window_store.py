"""The leaderboard tests' window store (`tests/report/_window_store.py`): a store that gets the template's rows
holds what seeding it writes, id for id (only the times of writing differ), and a store that already holds rows is
seeded, not copied into."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from storage.engine import Store
from tests.report._window_store import _TEMPLATES, _seed, seed_window_store


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows without its times of writing (`*_at`, `not_before`)."""
    con = sqlite3.connect(path)
    try:
        out: dict[str, list[tuple[object, ...]]] = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")') if not c[1].endswith("_at") and c[1] != "not_before"]
            quoted = ", ".join(f'"{c}"' for c in cols)
            out[table] = con.execute(f'SELECT {quoted} FROM "{table}" ORDER BY rowid').fetchall()
        return out
    finally:
        con.close()


async def test_a_copied_window_store_holds_what_seeding_writes(tmp_path: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'seeded.db'}") as store:
        seeded = await _seed(store, seed=7)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'copied.db'}") as store:
        copied = await seed_window_store(store)
    assert 7 in _TEMPLATES and copied == seeded
    a, b = _rows(tmp_path / "seeded.db"), _rows(tmp_path / "copied.db")
    assert a == b and len(a["question_result"]) > 1000 and len(a["gpu_job"]) == 20


async def test_a_store_with_rows_is_seeded(tmp_path: Path) -> None:
    from sqlalchemy import func, select

    from storage.models import Entity, GpuJob

    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}") as store:
        async with store.transaction() as s:
            s.add(Entity(id=500, source="test", external_id="own", domain="sports", name="the test's own",
                         occurred_at=datetime(2025, 1, 2, tzinfo=UTC), content_hash="h"))
        info = await seed_window_store(store, seed=8)  # not empty: seeded afresh, beside the test's row
        async with store.session() as s:
            entities = (await s.execute(select(func.count()).select_from(Entity))).scalar()
            jobs = (await s.execute(select(func.count()).select_from(GpuJob))).scalar()
    assert 8 not in _TEMPLATES and entities == 61 and jobs == 20 and len(info.snapshots) == 3
