"""bench/year.py's entity figures on a real store: nothing lost when the late entity was carried, the waiting and
the lost told apart, and each month's carried entities."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import update

from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, build_snapshot
from storage.engine import Store
from storage.models import Entity, Probe
from tests.snapshots.factories import add_ready_entity, fill_period, make_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.support.year import StoreView
from bench.year import Year

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
GEMMA = [("gemma-3-270m", "embedded:gemma-3-270m")]


async def _build(store: Store, tmp_path: Path, period: str, now: datetime) -> None:
    settings = make_settings(tmp_path, allow_partial=True)  # as the year's: every month freezes when it closes
    res = await build_snapshot(store, snapshot_config(settings), period=period, now=now)
    assert res.status is BuildStatus.frozen, res.describe()


def _year(tmp_path: Path) -> Year:
    a = argparse.Namespace(months=2, start="2025-06-01", speed=14_400.0, add_target_month=0, gpu_from_month=0,
                           models=tmp_path / "no-models")
    return Year(a, tmp_path)


async def test_a_carried_entity_is_not_lost_and_each_months_carried_are_counted(tmp_path: Path) -> None:
    year = _year(tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{year.store.db}") as store:
        await fill_period(store, month_start=JUNE, per_domain=2)
        await _build(store, tmp_path, "2025-06", datetime(2025, 7, 3, tzinfo=UTC))
        await add_ready_entity(store, domain="movies", source="tmdb", external_id="late", occurred_at=datetime(2025, 6, 20, tzinfo=UTC))
        await fill_period(store, month_start=datetime(2025, 7, 1, tzinfo=UTC), per_domain=1, prefix="j")
        await _build(store, tmp_path, "2025-07", datetime(2025, 8, 2, tzinfo=UTC))
    got = year.entity_figures("2025-08")
    assert got["carried_by_month"] == {"2025-07": 1}
    assert got["entities_lost"] == 0 and got["entities_waiting_end"] == 0 and got["open_month"] == "2025-08"


async def test_an_eligible_entity_a_freeze_left_out_is_lost_one_ready_since_waits(tmp_path: Path) -> None:
    """Over the quotas of 2 (the year's quotas never fill): eligible and ready before the freeze, in no snapshot."""
    db = tmp_path / "clkt.db"
    async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
        ids = await fill_period(store, month_start=JUNE, per_domain=3)
        async with store.transaction() as s:  # they became ready in June, before the freeze (the store's clock)
            await s.execute(update(Entity).where(Entity.id.in_(ids)).values(updated_at=datetime(2025, 6, 20, tzinfo=UTC)))  # type: ignore[union-attr]
            await s.execute(update(Probe).values(created_at=datetime(2025, 6, 20, tzinfo=UTC)))
        await add_ready_entity(store, domain="music", source="deezer", external_id="unasked", targets=(),
                               occurred_at=datetime(2025, 6, 3, tzinfo=UTC))  # never probed: not eligible
        await _build(store, tmp_path, "2025-06", datetime(2025, 7, 3, tzinfo=UTC))
    got = StoreView(db).unplaced(open_month="2025-07", targets=GEMMA)
    assert got == {"lost": 4, "expired": 0, "missed": 4, "waiting": 1}
    assert StoreView(db).unplaced(open_month="2025-06", targets=GEMMA)["lost"] == 0  # June is the open month: aside
