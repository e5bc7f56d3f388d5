"""`clkt leaderboard`'s kept results (`clkt.report.board_cache`): a hit is the computed leaderboard, any change to what
the leaderboard reads computes afresh, an unreadable file is replaced, a refused query leaves no file, and only
the newest `CACHE_KEEP` files stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.report import board_cache
from clkt.report.board_cache import cache_key, cached_leaderboard
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.window import LeaderboardError, load_leaderboard
from storage.engine import Store
from storage.fingerprints import window_fingerprint
from storage.targets import add_exclusions
from tests.report._window_store import LANGS, SPEC, seed_window_store

Q = LeaderboardQuery(spec=SPEC, languages=LANGS, samples=200)


async def test_a_kept_result_is_the_computed_leaderboard(store: Store, tmp_path: Path) -> None:
    await seed_window_store(store)
    first, hit1 = await cached_leaderboard(store, Q, cache_dir=tmp_path)
    again, hit2 = await cached_leaderboard(store, Q, cache_dir=tmp_path)
    assert (hit1, hit2) == (False, True)
    assert again == first == await load_leaderboard(store, Q)
    assert len(list(tmp_path.glob("*.json"))) == 1
    # another query (seed, window, comparison...) is another result
    other, hit = await cached_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, samples=200, seed=1), cache_dir=tmp_path)
    assert not hit and other != first
    fresh, hit = await cached_leaderboard(store, Q, cache_dir=tmp_path, refresh=True)
    assert not hit and fresh == first


async def test_a_change_to_the_store_computes_afresh(store: Store, tmp_path: Path) -> None:
    info = await seed_window_store(store)
    before, _ = await cached_leaderboard(store, Q, cache_dir=tmp_path)
    async with store.session() as s:
        fp = await window_fingerprint(s)
    sid = info.snapshots["2025-01"]
    entity = min(e for q, e in info.entity_of.items())
    async with store.transaction() as s:  # alpha recognised one more entity of the first snapshot
        await add_exclusions(s, snapshot_id=sid, target="alpha", entities=[(entity, "known")])
    async with store.session() as s:
        assert await window_fingerprint(s) != fp
    after, hit = await cached_leaderboard(store, Q, cache_dir=tmp_path)
    assert not hit
    assert after == await load_leaderboard(store, Q) and after != before
    alpha_before = next(r for r in before.rows if r.target == "alpha")
    alpha_after = next(r for r in after.rows if r.target == "alpha")
    assert alpha_after.entities == alpha_before.entities - 1


async def test_an_unreadable_file_is_replaced(store: Store, tmp_path: Path) -> None:
    await seed_window_store(store)
    async with store.session() as s:
        path = tmp_path / f"{cache_key(Q, await window_fingerprint(s))}.json"
    path.write_text('{"spec": "half a fi', encoding="utf-8")
    board, hit = await cached_leaderboard(store, Q, cache_dir=tmp_path)
    assert not hit and board == await load_leaderboard(store, Q)
    assert (await cached_leaderboard(store, Q, cache_dir=tmp_path))[1]  # the file was rewritten whole


async def test_a_refused_query_leaves_no_file(store: Store, tmp_path: Path) -> None:
    await seed_window_store(store)
    with pytest.raises(LeaderboardError, match="unknown target 'gamma'"):
        await cached_leaderboard(store, LeaderboardQuery(spec=SPEC, targets=("gamma",)), cache_dir=tmp_path / "kept")
    assert not (tmp_path / "kept").exists()


async def test_only_the_newest_files_are_kept(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await seed_window_store(store)
    monkeypatch.setattr(board_cache, "CACHE_KEEP", 2)
    for seed in range(4):
        await cached_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, samples=100, seed=seed), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


async def test_a_cache_dir_that_cannot_be_written_still_answers(store: Store, tmp_path: Path) -> None:
    await seed_window_store(store)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")
    board, hit = await cached_leaderboard(store, Q, cache_dir=blocked / "cache")
    assert not hit and board == await load_leaderboard(store, Q)
