"""`snapshot_entity` (where each entity landed) and its migration: a store frozen before carry-over gets a placement
for every entity of its frozen snapshots (own period, not carried), and one frozen snapshot per period is enforced."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, build_snapshot
from storage.engine import Store
from storage.models import Snapshot, SnapshotEntity, SnapshotItem, SnapshotStatus
from tests.snapshots.factories import fill_period, make_settings
from tests.storage._revisions import migrate_store

BEFORE = "a7e3c9d1f502"  # the revision before snapshot_entity


async def test_the_migration_places_the_entities_of_existing_frozen_snapshots(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    async with Store(url=url) as store:
        await fill_period(store, month_start=datetime(2025, 6, 1, tzinfo=UTC), per_domain=2)
        res = await build_snapshot(store, snapshot_config(make_settings(tmp_path)), period="2025-06",
                                   now=datetime(2025, 7, 3, tzinfo=UTC))
        assert res.status is BuildStatus.frozen
    await migrate_store(url, BEFORE, down=True)  # the store as the version before carry-over left it
    async with Store(url=url) as store, store.session() as s:  # opening upgrades it to the head
        placed = (await s.execute(select(SnapshotEntity))).scalars().all()
        items = (await s.execute(select(func.count(func.distinct(SnapshotItem.entity_id))))).scalar_one()
        view = (await s.execute(text("SELECT state, COUNT(*) FROM v_entity_accounting GROUP BY state"))).all()
    assert len(placed) == items == 8
    assert {(p.snapshot_id, p.own_period, p.carried) for p in placed} == {(res.snapshot_id, "2025-06", False)}
    assert dict(view) == {"frozen": 8}


async def test_a_second_frozen_snapshot_of_a_period_is_refused_by_the_store(store: Store) -> None:
    async with store.transaction() as s:
        s.add(Snapshot(id="demo-2025-06-a", spec="demo", period="2025-06", status=SnapshotStatus.frozen))
    with pytest.raises(IntegrityError):
        async with store.transaction() as s:
            s.add(Snapshot(id="demo-2025-06-b", spec="demo", period="2025-06", status=SnapshotStatus.frozen))
    async with store.transaction() as s:  # a superseded (or another spec's) row beside it is fine
        s.add(Snapshot(id="demo-2025-06-c", spec="demo", period="2025-06", status=SnapshotStatus.superseded))
        s.add(Snapshot(id="other-2025-06-a", spec="other", period="2025-06", status=SnapshotStatus.frozen))
