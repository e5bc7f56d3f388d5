"""Carry-over (`clkt.snapshots.carry`): every path that used to lose a ready entity lands it in the next snapshot
that freezes, exactly once; the faults (a target set that changed, a freeze that dies, two builders, a forced
rebuild) never place one twice."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from clkt.config import Settings, TargetSettings
from clkt.errors import FreezeConflict
from clkt.roster.window import in_window
from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildResult, BuildStatus, SnapshotExists, build_snapshot
from clkt.snapshots.layout import MANIFEST_FILE, load_snapshot_dir
from storage.engine import Session, Store
from storage.models import Entity, EntityStatus, Snapshot, SnapshotEntity, SnapshotItem, SnapshotStatus
from storage.placements import accounting_counts
from storage.snapshots import SnapshotRecord
from storage.target_probes import snapshots_of_spec
from tests.snapshots.factories import add_ready_entity, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
JULY = datetime(2025, 7, 1, tzinfo=UTC)
AUG = datetime(2025, 8, 1, tzinfo=UTC)
JULY_3 = datetime(2025, 7, 3, tzinfo=UTC)
AUG_2 = datetime(2025, 8, 2, tzinfo=UTC)


async def _build(store: Store, settings: Settings, period: str, now: datetime, **kw: object) -> BuildResult:
    res = await build_snapshot(store, snapshot_config(settings), period=period, now=now, **kw)  # type: ignore[arg-type]
    assert res.status is BuildStatus.frozen, res.describe()
    return res


async def _snapshots_of(store: Store, entity_id: int) -> list[str]:
    """The frozen snapshots whose items reference the entity."""
    async with store.session() as s:
        rows = await s.execute(
            select(SnapshotItem.snapshot_id).join(Snapshot, Snapshot.id == SnapshotItem.snapshot_id)  # type: ignore[arg-type]
            .where(SnapshotItem.entity_id == entity_id, Snapshot.status == SnapshotStatus.frozen).distinct()
        )
        return [r for (r,) in rows]


async def _placement(store: Store, entity_id: int) -> SnapshotEntity | None:
    async with store.session() as s:
        return (await s.execute(select(SnapshotEntity).where(SnapshotEntity.entity_id == entity_id))).scalars().first()


async def _late(store: Store, name: str, *, day: int = 20, **kw: object) -> int:
    return await add_ready_entity(store, domain="movies", source="tmdb", external_id=name,
                                  occurred_at=datetime(2025, 6, day, tzinfo=UTC), **kw)  # type: ignore[arg-type]


async def _june_frozen_then_late(store: Store, settings: Settings) -> int:
    """June frozen (2 a domain), then a June entity ready only now (late), and July's own entities (2 a domain)."""
    await fill_period(store, month_start=JUNE, per_domain=2)
    await _build(store, settings, "2025-06", JULY_3)
    late = await _late(store, "late-june")
    await fill_period(store, month_start=JULY, per_domain=2, prefix="j")
    return late


async def _assert_carried_once(store: Store, eid: int, into: str, own: str) -> None:
    assert await _snapshots_of(store, eid) == [into]
    placed = await _placement(store, eid)
    assert placed is not None and placed.snapshot_id == into and placed.carried and placed.own_period == own


async def test_an_entity_ready_after_its_period_froze_lands_in_the_next_snapshot_once(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    june = await _build(store, settings, "2025-06", JULY_3)
    late = await _late(store, "late-june")  # ready only now: June is frozen
    await fill_period(store, month_start=JULY, per_domain=2, prefix="j")
    july = await _build(store, settings, "2025-07", AUG_2, allow_partial=True)
    assert july.snapshot_id is not None
    await _assert_carried_once(store, late, july.snapshot_id, "2025-06")
    manifest = load_snapshot_dir(july.path).manifest  # type: ignore[arg-type]
    assert [(c.period, c.occurred_on, c.domain) for c in manifest.carried] == [("2025-06", "2025-06-20", "movies")]
    assert manifest.earliest_day == "2025-06-20"
    # a target added later is checked against the earliest own date the snapshot holds, not its period's start
    async with store.session() as s:
        refs = {r.period: r.period_start for r in await snapshots_of_spec(s, spec="demo")}
    assert refs == {"2025-06": "2025-06-01", "2025-07": "2025-06-20"}
    late_cutoff = TargetSettings(name="t", model="m", cutoff=date(2024, 12, 24))  # + 183 days: fresh from 2025-06-25
    assert in_window(date(2025, 7, 1), late_cutoff, 183) and not in_window(date.fromisoformat(refs["2025-07"]), late_cutoff, 183)
    # a snapshot without a carried entity has no `carried` key at all: the manifests frozen before keep their bytes
    assert "carried" not in json.loads((june.path / MANIFEST_FILE).read_text())  # type: ignore[operator]
    # a later snapshot does not take it again
    await fill_period(store, month_start=AUG, per_domain=2, prefix="a")
    await _build(store, settings, "2025-08", datetime(2025, 9, 2, tzinfo=UTC))
    assert len(await _snapshots_of(store, late)) == 1


async def test_the_entities_over_a_periods_quotas_land_in_the_next_snapshot_once(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    june_ids = await fill_period(store, month_start=JUNE, per_domain=3)  # quotas are 2 a domain: 4 entities over
    await _build(store, settings, "2025-06", JULY_3)
    over = [e for e in june_ids if not await _snapshots_of(store, e)]
    assert len(over) == 4
    await fill_period(store, month_start=JULY, per_domain=1, prefix="j")  # one a domain of July's own: room for one
    july = await _build(store, settings, "2025-07", AUG_2)
    assert july.snapshot_id is not None and not july.partial
    for e in over:
        await _assert_carried_once(store, e, july.snapshot_id, "2025-06")
    assert sum(r.carried for r in july.report) == 4


async def test_an_under_quota_period_the_calendar_left_behind_is_carried_once(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    may = await fill_period(store, month_start=datetime(2025, 5, 1, tzinfo=UTC), per_domain=1, prefix="m")
    cfg = snapshot_config(settings)
    under = await build_snapshot(store, cfg, period="2025-05", now=datetime(2025, 6, 3, tzinfo=UTC))
    assert under.status is BuildStatus.under_quota
    # in June, May is the closed period still waiting for its quotas: a June build never takes its entities
    await fill_period(store, month_start=JUNE, per_domain=2)
    june = await _build(store, settings, "2025-06", datetime(2025, 6, 28, tzinfo=UTC))
    assert [await _snapshots_of(store, e) for e in may] == [[] for _ in may]
    # July's build, once the calendar moved past May's last chance, takes them (first, within the quotas)
    await fill_period(store, month_start=JULY, per_domain=1, prefix="j")
    july = await _build(store, settings, "2025-07", AUG_2)
    assert june.snapshot_id != july.snapshot_id and july.snapshot_id is not None
    for e in may:
        await _assert_carried_once(store, e, july.snapshot_id, "2025-05")


async def test_a_carried_entity_must_qualify_for_the_targets_of_the_snapshot_it_joins(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    await _build(store, settings, "2025-06", JULY_3)
    late = await _late(store, "late-june")
    unasked = await _late(store, "late-unasked", day=21)
    # a target joined since June: it was asked about one of them (clean), not about the other
    newcomer = TargetSettings(name="smollm", model="embedded:smollm2-135m-instruct", cutoff=date(2024, 6, 1))
    both = settings.model_copy(update={"spec": settings.spec.model_copy(update={"targets": [*settings.spec.targets, newcomer]})})
    await _probe(store, late, "smollm", known=False)
    for e in await fill_period(store, month_start=JULY, per_domain=2, prefix="j"):
        await _probe(store, e, "smollm", known=False)
    july = await _build(store, both, "2025-07", AUG_2)
    assert july.snapshot_id is not None
    await _assert_carried_once(store, late, july.snapshot_id, "2025-06")
    assert await _snapshots_of(store, unasked) == []
    assert july.excluded.get("carried: probe: not probed clean for every target") == 1
    # a target whose cutoff + buffer is after June: no June entity may join a snapshot built for it
    recent = TargetSettings(name="recent", model="embedded:recent", cutoff=date(2025, 1, 1))
    later = settings.model_copy(update={"spec": settings.spec.model_copy(update={"targets": [recent]})})
    await _probe(store, unasked, "recent", known=False)
    for e in await fill_period(store, month_start=AUG, per_domain=2, prefix="a"):
        await _probe(store, e, "recent", known=False)
    aug = await _build(store, later, "2025-08", datetime(2025, 9, 2, tzinfo=UTC))
    # refused by the gate: it, and July's movie over the quota (July 1-2, before 2025-01-01 + 183 days)
    assert await _snapshots_of(store, unasked) == [] and aug.excluded.get("carried: before a target's cutoff + buffer") == 2


async def _probe(store: Store, entity_id: int, target: str, *, known: bool) -> None:
    from storage.models import Probe

    async with store.transaction() as s:
        s.add(Probe(entity_id=entity_id, target_model=target, lang="en", prompt="p", response="r", known=known,
                    judge="fact-matcher", prompt_version="p1"))


async def test_a_freeze_that_dies_after_the_carry_leaves_nothing_and_the_next_carries_once(store: Store, tmp_path: Path) -> None:
    """Carry and freeze are one transaction: a failure after the placements were written (the hook that enqueues the
    GPU jobs raises) rolls back the snapshot, its items, its placements and the expiry; the next build carries once."""
    settings = make_settings(tmp_path)
    late = await _june_frozen_then_late(store, settings)
    placed_before_death: list[int] = []

    async def die(session: Session, snap: SnapshotRecord) -> None:
        n = (await session.execute(select(func.count()).select_from(SnapshotEntity).where(SnapshotEntity.snapshot_id == snap.id))).scalar_one()
        placed_before_death.append(int(n))
        raise RuntimeError("killed mid-freeze")

    with pytest.raises(RuntimeError):
        await build_snapshot(store, snapshot_config(settings), period="2025-07", now=AUG_2, on_frozen=die)
    assert placed_before_death and placed_before_death[0] > 0  # the carry was written when it died
    assert await _placement(store, late) is None and await _snapshots_of(store, late) == []
    assert not (tmp_path / "snapshots" / "demo" / "2025-07").exists()
    july = await _build(store, settings, "2025-07", AUG_2)
    assert july.snapshot_id is not None
    await _assert_carried_once(store, late, july.snapshot_id, "2025-06")


async def test_two_builders_freezing_the_same_period_one_wins_nothing_carried_twice(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path)
    late = await _june_frozen_then_late(store, settings)
    async with Store(url=db_url) as a, Store(url=db_url) as b:
        results = await asyncio.gather(
            *(build_snapshot(x, snapshot_config(settings), period="2025-07", now=AUG_2) for x in (a, b)),
            return_exceptions=True,
        )
    won = [r for r in results if isinstance(r, BuildResult)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 1 and isinstance(lost[0], (SnapshotExists, FreezeConflict)), results
    assert won[0].snapshot_id is not None
    await _assert_carried_once(store, late, won[0].snapshot_id, "2025-06")
    async with store.session() as s:
        frozen = (await s.execute(select(func.count()).select_from(Snapshot).where(
            Snapshot.period == "2025-07", Snapshot.status == SnapshotStatus.frozen))).scalar_one()
    assert frozen == 1


async def test_two_builders_of_two_periods_never_carry_one_entity_twice(db_url: str, store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, allow_partial=True)
    await fill_period(store, month_start=JUNE, per_domain=2)
    await _build(store, settings, "2025-06", JULY_3)
    late = await _late(store, "late-june")
    await fill_period(store, month_start=JULY, per_domain=1, prefix="j")
    await fill_period(store, month_start=AUG, per_domain=1, prefix="a")
    sept = datetime(2025, 9, 2, tzinfo=UTC)  # July never froze: both July's and August's builds are offered June's late one
    async with Store(url=db_url) as a, Store(url=db_url) as b:
        results = await asyncio.gather(
            build_snapshot(a, snapshot_config(settings), period="2025-07", now=sept),
            build_snapshot(b, snapshot_config(settings), period="2025-08", now=sept),
            return_exceptions=True,
        )
    errors = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(e, FreezeConflict) for e in errors), results
    assert len(await _snapshots_of(store, late)) == 1
    if errors:  # the loser builds again: what is left, nothing twice
        loser = "2025-07" if isinstance(results[0], BaseException) else "2025-08"
        again = await build_snapshot(store, snapshot_config(settings), period=loser, now=sept)
        assert again.status in (BuildStatus.frozen, BuildStatus.under_quota)  # under quota: the winner carried all
    assert len(await _snapshots_of(store, late)) == 1
    async with store.session() as s:
        counts = Counter((await s.execute(select(SnapshotEntity.entity_id))).scalars().all())
    assert counts and max(counts.values()) == 1


async def test_a_forced_rebuild_of_an_old_period_never_takes_back_what_a_later_snapshot_carried(
    store: Store, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path)
    late = await _june_frozen_then_late(store, settings)
    july = await _build(store, settings, "2025-07", AUG_2)
    assert july.snapshot_id is not None
    rebuilt = await _build(store, settings, "2025-06", datetime(2025, 9, 2, tzinfo=UTC), force=True)
    assert rebuilt.superseded is not None
    await _assert_carried_once(store, late, july.snapshot_id, "2025-06")
    # a forced rebuild of the snapshot that holds carried entities carries them again (its period's own offer)
    again = await _build(store, settings, "2025-07", datetime(2025, 9, 2, tzinfo=UTC), force=True)
    assert again.snapshot_id is not None
    await _assert_carried_once(store, late, again.snapshot_id, "2025-06")


async def test_an_entity_past_the_carry_window_is_dropped_as_expired_and_counted(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, carry_max_days=20)
    old = await add_ready_entity(store, domain="movies", source="tmdb", external_id="old",
                                 occurred_at=datetime(2025, 5, 2, tzinfo=UTC))
    await fill_period(store, month_start=JUNE, per_domain=2)
    await _build(store, settings, "2025-06", JULY_3)
    async with store.session() as s:
        e = await s.get(Entity, old)
        assert e is not None and e.status is EntityStatus.expired and "expired" in (e.status_reason or "")
        counts = {(c.month, c.state, c.reason): c.n for c in await accounting_counts(s)}
    assert counts[("2025-05", "dropped", "expired")] == 1
    assert counts[("2025-06", "frozen", None)] == 8


_KILLED_MID_FREEZE = """
import asyncio, os, sys
from datetime import UTC, datetime
from pathlib import Path
from clkt.services import snapshot_config
from clkt.snapshots.builder import build_snapshot
from storage.engine import Store
from tests.snapshots.factories import make_settings

async def main() -> None:
    async def die(session, snap):  # the placements and items are flushed: the process dies like kill -9
        await session.flush()
        os._exit(9)

    async with Store(url=sys.argv[1]) as store:
        await build_snapshot(store, snapshot_config(make_settings(Path(sys.argv[2]))), period="2025-07",
                             now=datetime(2025, 8, 2, tzinfo=UTC), on_frozen=die)

asyncio.run(main())
"""


async def test_a_process_killed_mid_freeze_carries_nothing_and_the_next_build_carries_once(
    db_url: str, store: Store, tmp_path: Path,
) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    settings = make_settings(tmp_path)
    late = await _june_frozen_then_late(store, settings)
    proc = subprocess.run([sys.executable, "-c", _KILLED_MID_FREEZE, db_url, str(tmp_path)], cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()[-2000:]
    async with Store(url=db_url) as fresh:  # what the next process finds
        assert await _placement(fresh, late) is None and await _snapshots_of(fresh, late) == []
        async with fresh.session() as s:
            assert (await s.execute(select(func.count()).select_from(Snapshot).where(Snapshot.period == "2025-07"))).scalar_one() == 0
        assert not (tmp_path / "snapshots" / "demo" / "2025-07").exists()
        july = await _build(fresh, settings, "2025-07", AUG_2)
        assert july.snapshot_id is not None
        await _assert_carried_once(fresh, late, july.snapshot_id, "2025-06")
