"""Every entity in exactly one state per month of occurrence (`v_entity_accounting`, `clkt status`, the status page),
and the builder service's warning when entities wait past a period."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from clkt.context import ServiceContext
from clkt.services import snapshot_config
from clkt.snapshots.accounting import period_accounting
from clkt.snapshots.builder import BuildStatus
from clkt.snapshots.service import SnapshotBuilder
from clkt.status import accounting_table, collect_status
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.models import EntityStatus, TargetModel
from storage.placements import AccountingCount
from tests.snapshots.factories import add_ready_entity, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)


async def test_each_entity_is_counted_once_in_its_state_by_month(store: Store, tmp_path: Path) -> None:
    from clkt.snapshots.builder import build_snapshot

    settings = make_settings(tmp_path, carry_max_days=20)
    await add_ready_entity(store, domain="movies", source="tmdb", external_id="old", occurred_at=datetime(2025, 5, 2, tzinfo=UTC))
    await fill_period(store, month_start=JUNE, per_domain=3)  # 4 over the quotas of 2: they wait
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=datetime(2025, 7, 3, tzinfo=UTC))
    assert res.status is BuildStatus.frozen
    await add_ready_entity(store, domain="music", source="deezer", external_id="probing", status=EntityStatus.probing,
                           occurred_at=datetime(2025, 6, 9, tzinfo=UTC))
    await add_ready_entity(store, domain="music", source="deezer", external_id="known", status=EntityStatus.known,
                           occurred_at=datetime(2025, 6, 10, tzinfo=UTC))
    # ready, but an active target knows it (one added since): dropped as known, never waiting; what a target that left
    # the configuration knew does not count
    async with store.transaction() as s:
        s.add(TargetModel(name="gemma-3-270m", model="embedded:gemma-3-270m", kind="base", active=True))
        s.add(TargetModel(name="gone", model="embedded:gone", kind="base", active=False))
    await add_ready_entity(store, domain="music", source="deezer", external_id="known-later", known_by=("gemma-3-270m",),
                           occurred_at=datetime(2025, 6, 11, tzinfo=UTC))
    await add_ready_entity(store, domain="music", source="deezer", external_id="known-by-gone", targets=("gemma-3-270m", "gone"),
                           known_by=("gone",), occurred_at=datetime(2025, 6, 12, tzinfo=UTC))
    rep = await collect_status(store)
    by = {r.month: r for r in rep.accounting}
    assert by["2025-05"].dropped == {"expired": 1} and by["2025-05"].total == 1
    june = by["2025-06"]
    assert (june.frozen, june.waiting, june.pipeline, june.carried, june.ready) == (8, 5, 1, 0, 0)
    assert june.dropped == {"known": 2} and june.total == 16  # 12 filled + probing + known + known-later + known-by-gone
    assert list(accounting_table(rep.accounting).columns[0].cells) == ["2025-05", "2025-06"]


def test_ready_entities_of_the_current_month_are_ready_not_waiting() -> None:
    counts = [AccountingCount(month="2025-06", state="ready", reason=None, n=3),
              AccountingCount(month="2025-07", state="ready", reason=None, n=2),
              AccountingCount(month="2025-07", state="dropped", reason=None, n=1)]
    rows = period_accounting(counts, now=datetime(2025, 7, 15, tzinfo=UTC))
    assert [(r.month, r.ready, r.waiting, r.dropped) for r in rows] == [
        ("2025-06", 0, 3, {}), ("2025-07", 2, 0, {"other": 1})]


async def test_the_builder_warns_when_entities_wait_past_a_period(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="clkt.snapshots.service")
    settings = make_settings(tmp_path, carry_max_days=0)  # nothing is carried: they wait, then expire
    await fill_period(store, month_start=datetime(2025, 4, 1, tzinfo=UTC), per_domain=1, prefix="apr")  # never fills
    now = {"t": datetime(2025, 6, 2, tzinfo=UTC)}
    svc = SnapshotBuilder(config=snapshot_config(settings), gpu=settings.gpu.model_copy(update={"enabled": False}))
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics(), clock=lambda: now["t"])
        await svc.check(ctx)
        await svc.check(ctx)  # the same count is said once
    said = [r.getMessage() for r in caplog.records if "wait to be carried" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("4 ready entities of periods before 2025-05"), said
