"""A leaderboard window reads each entity's own date (`clkt.report.own_dates`): a June entity carried into July's
snapshot counts in a June window, not in a July one, and a window over every period changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.own_dates import with_carried_snapshots, with_own_dates
from clkt.report.window import _bounds
from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, build_snapshot
from storage.engine import Store
from storage.leaderboard import WindowData, window_snapshots
from tests.snapshots.factories import add_ready_entity, fill_period, make_settings

TARGET = "gemma-3-270m"


async def _june_late_into_july(store: Store, tmp_path: Path) -> tuple[int, list[int]]:
    settings = make_settings(tmp_path, allow_partial=True)
    await fill_period(store, month_start=datetime(2025, 6, 1, tzinfo=UTC), per_domain=2)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=datetime(2025, 7, 3, tzinfo=UTC))
    assert res.status is BuildStatus.frozen
    late = await add_ready_entity(store, domain="movies", source="tmdb", external_id="late",
                                  occurred_at=datetime(2025, 6, 20, tzinfo=UTC))
    july = await fill_period(store, month_start=datetime(2025, 7, 1, tzinfo=UTC), per_domain=1, prefix="j")
    res = await build_snapshot(store, snapshot_config(settings), period="2025-07", now=datetime(2025, 8, 2, tzinfo=UTC))
    assert res.status is BuildStatus.frozen
    return late, july


async def _window(store: Store, q: LeaderboardQuery) -> tuple[list[str], dict[tuple[str, str], frozenset[int]]]:
    async with store.session() as s:
        every = await window_snapshots(s, "demo")
        start, end = _bounds(q)
        chosen = [x for x in every if (q.period_from is None or x.period >= q.period_from)
                  and (q.period_to is None or x.period <= q.period_to)]
        chosen = await with_carried_snapshots(s, q, chosen, every, start, end)
        data = WindowData(snapshots=tuple(chosen), ready=frozenset((x.id, TARGET) for x in chosen), exclusions={}, jobs=())
        data = await with_own_dates(s, q, data, start, end)
    return [x.period for x in chosen], {k: v for k, v in data.exclusions.items()}


async def test_a_carried_entity_counts_in_its_own_periods_window(store: Store, tmp_path: Path) -> None:
    late, july_own = await _june_late_into_july(store, tmp_path)
    periods, excl = await _window(store, LeaderboardQuery(spec="demo", period_from="2025-06", period_to="2025-06"))
    assert periods == ["2025-06", "2025-07"]  # July's snapshot holds a June entity
    (july_key,) = [k for k in excl]
    assert late not in excl[july_key] and set(july_own) <= excl[july_key]  # of July's snapshot, only the June entity
    periods, excl = await _window(store, LeaderboardQuery(spec="demo", period_from="2025-07", period_to="2025-07"))
    assert periods == ["2025-07"] and list(excl.values()) == [frozenset({late})]
    periods, excl = await _window(store, LeaderboardQuery(spec="demo"))
    assert periods == ["2025-06", "2025-07"] and excl == {}
