"""Targets over time (`storage.targets`): the registry of targets a store has had, a frozen snapshot's validity
per target, and the exclusions of a target added after the freeze. On SQLite, and on PostgreSQL when
CLKT_TEST_PG_URL is set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from clkt.errors import ConfigError
from storage.engine import Store
from storage.enums import SnapshotTargetStatus
from storage.targets import (
    TargetIdentity,
    add_exclusions,
    excluded_entities,
    exclusion_counts,
    exclusions_of,
    list_targets,
    record_snapshot_target,
    snapshot_targets,
    sync_targets,
)
from tests.inject._fixtures import SNAPSHOT_ID, seed_store
from tests.storage._urls import BACKENDS, empty_store_url

T0 = datetime(2026, 1, 5, tzinfo=UTC)
GEMMA = TargetIdentity(name="gemma", model="embedded:gemma-3-270m", kind="base", cutoff=date(2024, 8, 1))
SMOL = TargetIdentity(name="smol", model="embedded:smollm2-135m-instruct", kind="instruct")


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = await empty_store_url(request.param, tmp_path / 'clkt.db')
    async with Store(url=url) as store:
        await seed_store(store, tmp_path / "export")
        yield store


async def test_targets_are_added_removed_and_return(any_store: Store) -> None:
    async with any_store.transaction() as s:
        first = await sync_targets(s, [GEMMA], now=T0)
    assert first.added == ("gemma",) and first.removed == () and first.returned == ()
    june = T0 + timedelta(days=150)
    async with any_store.transaction() as s:
        mid = await sync_targets(s, [GEMMA, SMOL], now=june)
    assert mid.added == ("smol",) and mid.removed == ()
    async with any_store.transaction() as s:
        gone = await sync_targets(s, [SMOL], now=june + timedelta(days=1))
    assert gone.removed == ("gemma",) and gone.added == ()
    async with any_store.session() as s:
        rows = {r.name: r for r in await list_targets(s)}
        active = [r.name for r in await list_targets(s, active_only=True)]
    assert active == ["smol"]
    assert rows["gemma"].active is False and rows["gemma"].first_seen_at == T0  # kept, with its history
    assert rows["gemma"].cutoff == date(2024, 8, 1) and rows["smol"].cutoff is None
    assert rows["smol"].first_seen_at == june
    async with any_store.transaction() as s:
        back = await sync_targets(s, [GEMMA, SMOL], now=june + timedelta(days=2))
    assert back.returned == ("gemma",) and back.added == () and back.removed == ()


async def test_a_name_that_now_names_another_model_is_refused_and_nothing_is_written(any_store: Store) -> None:
    async with any_store.transaction() as s:
        await sync_targets(s, [GEMMA], now=T0)
    renamed = TargetIdentity(name="gemma", model="google/gemma-2-9b-it", kind="instruct")
    with pytest.raises(ConfigError) as e:
        async with any_store.transaction() as s:
            await sync_targets(s, [renamed, SMOL], now=T0 + timedelta(days=1))
    assert "'gemma' is model 'embedded:gemma-3-270m' in this store" in str(e.value)
    assert "give the new model a new name" in str(e.value) and e.value.key == "spec.targets"
    async with any_store.session() as s:
        rows = await list_targets(s)
    assert [(r.name, r.model, r.active) for r in rows] == [("gemma", "embedded:gemma-3-270m", True)]  # smol not added


async def test_snapshot_validity_per_target_is_upserted_and_exclusions_are_recorded_once(any_store: Store) -> None:
    async with any_store.transaction() as s:
        await record_snapshot_target(s, snapshot_id=SNAPSHOT_ID, target="gemma", status=SnapshotTargetStatus.ready,
                                     entities=2, now=T0)
        await record_snapshot_target(s, snapshot_id=SNAPSHOT_ID, target="smol", status=SnapshotTargetStatus.probing,
                                     entities=2, now=T0)
    async with any_store.session() as s:
        rows = {r.target_name: r for r in await snapshot_targets(s, snapshot_id=SNAPSHOT_ID)}
    assert rows["gemma"].status is SnapshotTargetStatus.ready and rows["gemma"].valid == 2
    assert rows["smol"].valid == 0  # not valid while it is being probed
    async with any_store.transaction() as s:
        assert await add_exclusions(s, snapshot_id=SNAPSHOT_ID, target="smol", entities=[(1, "known in en: names the director")]) == 1
        assert await add_exclusions(s, snapshot_id=SNAPSHOT_ID, target="smol", entities=[(1, "again")]) == 0
        await record_snapshot_target(s, snapshot_id=SNAPSHOT_ID, target="smol", status=SnapshotTargetStatus.ready,
                                     entities=2, excluded=1, now=T0 + timedelta(hours=1))
    async with any_store.session() as s:
        (smol,) = await snapshot_targets(s, target="smol")
        ready = await snapshot_targets(s, status=SnapshotTargetStatus.ready)
        assert await excluded_entities(s, SNAPSHOT_ID, "smol") == frozenset({1})
        assert await excluded_entities(s, SNAPSHOT_ID, "gemma") == frozenset()
        (ex,) = await exclusions_of(s, target="smol")
        counts = await exclusion_counts(s)
    assert smol.status is SnapshotTargetStatus.ready and smol.valid == 1 and smol.updated_at == T0 + timedelta(hours=1)
    assert [r.target_name for r in ready] == ["gemma", "smol"]
    assert ex.entity_id == 1 and ex.reason == "known in en: names the director"  # the first reason is kept
    assert counts == {(SNAPSHOT_ID, "smol"): 1}
