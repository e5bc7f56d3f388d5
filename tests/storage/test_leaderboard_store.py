"""The leaderboard's reads on SQLite and, when CLKT_TEST_PG_URL is set, on PostgreSQL: the window's snapshots,
validity, exclusions, packs and predictions, the probe verdicts by month, and the same pooled numbers on both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clkt.report.window import LeaderboardQuery, load_leaderboard
from storage.engine import Store
from storage.knowledge import known_by_month, probe_fingerprint
from storage.leaderboard import (
    iter_predictions,
    known_names,
    spec_names,
    window_data,
    window_fingerprint,
    window_snapshots,
)
from storage.questions import ProbeRecord, add_probes
from tests.report._window_store import LANGS, SPEC, WindowStore, seed_window_store
from tests.storage._urls import BACKENDS, empty_store_url


@pytest.fixture(params=BACKENDS)
async def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Store, WindowStore]]:
    url = await empty_store_url(request.param, tmp_path / 'clkt.db')
    async with Store(url=url) as store:
        info = await seed_window_store(store)
        yield store, info


async def test_the_window_reads(seeded: tuple[Store, WindowStore]) -> None:
    store, info = seeded
    async with store.session() as s:
        assert await spec_names(s) == ["lb", "other"]
        snaps = await window_snapshots(s, SPEC)
        assert [x.id for x in snaps] == [info.snapshots[p] for p in ("2025-01", "2025-02", "2025-03")]  # not the superseded one
        names = await known_names(s)
        assert names.targets == {"alpha", "beta"} and names.strategies == {"cpt-lora"} and names.scorers == {"generate", "option-loglik"}
        data = await window_data(s, snaps, scorer="generate")
        assert data.ready == {k for k in info.ready if k[0] in {x.id for x in snaps}}
        assert data.exclusions == {k: frozenset(v) for k, v in info.excluded.items()}
        assert len(data.jobs) == 3 * 2 * 2 and {p.scorer for p in data.packs} == {"generate"}
        assert len(data.packs) == 10  # beta's 2025-03 jobs do not count: not valid for it
        rows = [r async for r in iter_predictions(s, [j for j in data.jobs if j.target == "beta"], data.exclusions, scorer="generate")]
        fp = await window_fingerprint(s)
    assert len(rows) == 22 * 3 * 3 * 2 * 2 + 12 * 3 * 3 * 2 * 2  # valid ones and 2025-03's (filtered by the caller)
    assert all(r.entity_id not in info.excluded.get((r.snapshot_id, r.target), set()) for r in rows)
    async with store.transaction() as s:
        from storage.targets import add_exclusions

        await add_exclusions(s, snapshot_id=info.snapshots["2025-01"], target="alpha", entities=[(1, "known")])
    async with store.session() as s:
        assert await window_fingerprint(s) != fp  # a new exclusion: the page reads afresh


async def test_the_same_numbers_on_every_store(seeded: tuple[Store, WindowStore]) -> None:
    store, _ = seeded
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, compare=("alpha", "beta")))
    got = {(r.target, r.scorer): (r.questions, r.overall.value, r.transfer.value, r.overall.ci) for r in board.rows}
    assert got[("alpha", "generate")][0] == 108 and got[("beta", "generate")][0] == 66
    assert board.comparison is not None and board.comparison.questions == 66
    # the store is seeded the same way whatever its engine: the numbers (and the seeded draws) are fixed
    assert got[("alpha", "generate")][1] == pytest.approx(0.5439814814814815, abs=1e-12)


async def test_the_verdicts_by_month(seeded: tuple[Store, WindowStore]) -> None:
    store, _ = seeded
    when = datetime(2026, 1, 1, tzinfo=UTC)
    async with store.session() as s:
        assert await probe_fingerprint(s) == (0, 0)
    async with store.transaction() as s:
        await add_probes(s, [ProbeRecord(entity_id=e, target_model="alpha", lang=lang, prompt="p", response="r", known=e % 4 == 0 and lang == "fr",
                                         matched_facts=(), reason="", judge="j", prompt_version="v", created_at=when)
                             for e in range(1, 37) for lang in ("en", "fr")])
    async with store.session() as s:
        rows = await known_by_month(s)
        only = await known_by_month(s, targets=["beta"])
        assert (await probe_fingerprint(s))[0] == 72
    assert [(r.month, r.asked, r.known) for r in rows] == [("2025-01", 12, 3), ("2025-02", 12, 3), ("2025-03", 12, 3)]
    assert only == []
