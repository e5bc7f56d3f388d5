"""The leaderboard tests' window store (`tests/report/_window_store.py`): a store that gets the template's rows
holds what seeding a store writes, id for id (only the times of writing differ); a store that already holds rows
is seeded, not copied into."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from storage.engine import Store
from storage.models import Entity
from tests.report._window_store import _TEMPLATES, seed_window_store

OWN = 500  # the id of the test's own entity, beside the window's 1..60


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows without its times of writing (`*_at`, `not_before`) and the test's own entity."""
    con = sqlite3.connect(path)
    try:
        out: dict[str, list[tuple[object, ...]]] = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")') if not c[1].endswith("_at") and c[1] != "not_before"]
            quoted = ", ".join(f'"{c}"' for c in cols)
            out[table] = con.execute(f'SELECT {quoted} FROM "{table}" ORDER BY rowid').fetchall()
        out["entity"] = [r for r in out["entity"] if r[0] != OWN]
        return out
    finally:
        con.close()


async def test_a_copied_window_store_holds_what_seeding_writes(tmp_path: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'copied.db'}") as store:
        copied = await seed_window_store(store)  # empty: the template's rows
    assert 7 in _TEMPLATES
    templates = len(_TEMPLATES)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'seeded.db'}") as store:
        async with store.transaction() as s:
            s.add(Entity(id=OWN, source="test", external_id="own", domain="sports", name="the test's own",
                         occurred_at=datetime(2025, 1, 2, tzinfo=UTC), content_hash="h"))
        seeded = await seed_window_store(store)  # not empty: seeded afresh, beside the test's row
    assert len(_TEMPLATES) == templates and copied == seeded
    a, b = _rows(tmp_path / "seeded.db"), _rows(tmp_path / "copied.db")
    assert a == b and len(a["question_result"]) > 1000 and len(a["gpu_job"]) == 20 and len(a["entity"]) == 60
