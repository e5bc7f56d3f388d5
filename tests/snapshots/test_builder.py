"""Selection, freezing, determinism, splits, under-quota, force rebuild."""

from __future__ import annotations

import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from clkt.errors import SnapshotError, UserError
from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, SnapshotExists, build_snapshot
from clkt.snapshots.layout import BUILD_FILE, load_snapshot_dir
from clkt.snapshots.stored import load_snapshot
from storage.engine import Store
from storage.models import Event, Snapshot, SnapshotItem, SnapshotStatus
from tests.snapshots.factories import LANGS, add_ready_entity, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_build_freezes_and_exports_native_layout(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=3)
    # noise: a later month, a known entity, an entity of the period that is not ready (an earlier month's entity
    # would be carried in: tests/snapshots/test_carry.py)
    await add_ready_entity(store, domain="movies", source="tmdb", external_id="may", occurred_at=datetime(2025, 7, 1, tzinfo=UTC))
    await add_ready_entity(store, domain="movies", source="tmdb", external_id="known", occurred_at=JUNE, known_by=("gemma-3-270m",))
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.status is BuildStatus.frozen, res.describe()
    assert res.snapshot_id and res.snapshot_id.startswith("demo-2025-06-") and len(res.snapshot_id) == len("demo-2025-06-") + 12
    assert res.path == tmp_path / "snapshots" / "demo" / "2025-06"
    data = load_snapshot_dir(res.path)
    assert data.manifest.snapshot_id == res.snapshot_id
    assert set(data.docs) == set(LANGS)
    names = {d.name for d in data.docs_for("en")}
    assert len(names) == 8 and not any("may" in n or "known" in n for n in names)
    # every qid in every language, same split, same letter; 4 options, answer consistent
    for lang in LANGS:
        assert [q.qid for q in data.questions_for(lang)] == data.qids()
    en = {q.qid: q for q in data.questions_for("en")}
    for q in data.questions_for("fr"):
        assert q.split == en[q.qid].split and q.answer == en[q.qid].answer
        assert q.options[q.answer_index].endswith(f"-right-{q.slot[-1]}")
    # the correct letter is spread uniformly (24 questions: 6 per letter overall)
    letters = Counter(q.answer for q in data.questions_for("en"))
    assert max(letters.values()) - min(letters.values()) <= 2, letters
    async with store.session() as s:
        row = await s.get(Snapshot, res.snapshot_id)
        assert row is not None and row.status is SnapshotStatus.frozen
        items = (await s.execute(select(SnapshotItem).where(SnapshotItem.snapshot_id == row.id))).scalars().all()
        assert len(items) == 24
        ev = (await s.execute(select(Event).where(Event.kind == "snapshot.frozen"))).scalars().all()
        assert len(ev) == 1
    assert data.manifest.counts["total"].fact_qas == 24
    assert data.manifest.counts["movies"].entities == 2
    assert data.manifest.counts["total"].val == data.manifest.counts["total"].val // 3 * 3


async def test_split_proportions_and_no_qid_across_splits(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, quotas={"movies": 5, "music": 5, "sports": 5, "disasters": 5})
    await fill_period(store, month_start=JUNE, per_domain=5, n_questions=5)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None
    data = load_snapshot_dir(res.path)
    val, test = set(data.qids("val")), set(data.qids("test"))
    assert not val & test
    assert len(val) + len(test) == 100
    assert len(val) == 20  # val_ratio 0.2
    by_domain = Counter(q.domain for q in data.questions_for("en", "val"))
    assert set(by_domain.values()) == {5}  # spread proportionally over the domains


async def test_deterministic_bytes(tmp_path: Path) -> None:
    """The same store content and seed give byte-identical files (build.json aside), in two stores."""
    trees = []
    for run in ("a", "b"):
        root = tmp_path / run
        root.mkdir()
        settings = make_settings(root)
        async with Store(url=f"sqlite+aiosqlite:///{root / 's.db'}") as store:
            await fill_period(store, month_start=JUNE, per_domain=3)
            res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW if run == "a" else NOW.replace(day=9))
            assert res.path is not None
            files = _files(res.path)
            # a re-export from the store reproduces the build's files
            async with store.session() as s:
                loaded = await load_snapshot(s, res.snapshot_id or "")
            assert loaded.content.content_sha256 == loaded.row.content_sha256
        trees.append(files)
    a, b = trees
    assert a.keys() == b.keys() and len(a) > 10
    differ = sorted(k for k in a if a[k] != b[k])
    assert differ == [BUILD_FILE]


async def test_seed_changes_selection(store: Store, tmp_path: Path) -> None:
    await fill_period(store, month_start=JUNE, per_domain=6)
    picks = []
    for seed in (0, 1, 2):
        settings = make_settings(tmp_path / f"s{seed}", seed=seed)
        res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW, force=True)
        assert res.path is not None
        picks.append(frozenset(d.name for d in load_snapshot_dir(res.path).docs_for("en")))
    assert len(set(picks)) > 1


async def test_balanced_across_sources(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, quotas={"movies": 0, "music": 4, "sports": 0, "disasters": 0})
    for i in range(6):
        await add_ready_entity(store, domain="music", source="musicbrainz", external_id=f"mb{i}", occurred_at=JUNE)
    await add_ready_entity(store, domain="music", source="deezer", external_id="dz0", occurred_at=JUNE)
    await add_ready_entity(store, domain="music", source="deezer", external_id="dz1", occurred_at=JUNE)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None
    srcs = Counter(d.source for d in load_snapshot_dir(res.path).docs_for("en"))
    assert srcs == {"musicbrainz": 2, "deezer": 2}


async def test_under_quota_reports_missing_and_freezes_nothing(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=1)
    await add_ready_entity(store, domain="sports", source="thesportsdb", external_id="half", occurred_at=JUNE, langs=("en", "ja"))
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.status is BuildStatus.under_quota
    assert res.missing == {"movies": 1, "music": 1, "sports": 1, "disasters": 1}
    sports = next(r for r in res.report if r.domain == "sports")
    assert (sports.ready_in_period, sports.eligible) == (2, 1)
    assert "document missing in a spec language" in res.excluded
    assert not (tmp_path / "snapshots" / "demo" / "2025-06").exists()
    async with store.session() as s:
        assert (await s.execute(select(Snapshot))).first() is None
    # allow_partial freezes what there is, and says so
    partial = await build_snapshot(store, snapshot_config(make_settings(tmp_path, allow_partial=True)), period="2025-06", now=NOW)
    assert partial.status is BuildStatus.frozen and partial.partial and partial.path is not None
    assert load_snapshot_dir(partial.path).manifest.missing == {"movies": 1, "music": 1, "sports": 1, "disasters": 1}


async def test_rebuild_refused_without_force_and_force_supersedes(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    first = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    with pytest.raises(SnapshotExists):
        await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    second = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW, force=True)
    assert second.snapshot_id != first.snapshot_id and second.superseded == first.snapshot_id
    async with store.session() as s:
        old = await s.get(Snapshot, first.snapshot_id)
        assert old is not None and old.status is SnapshotStatus.superseded and old.superseded_by == second.snapshot_id
        assert old.export_path and Path(old.export_path).is_dir()
        assert load_snapshot_dir(old.export_path).manifest.snapshot_id == first.snapshot_id
        assert (await load_snapshot(s, first.snapshot_id or "")).content.revision == 0
    assert load_snapshot_dir(tmp_path / "snapshots" / "demo" / "2025-06").manifest.revision == 1


async def test_bad_period_and_spec(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    for bad in ("2025-13", "June", "2025-6-1"):
        with pytest.raises(UserError, match="period"):
            await build_snapshot(store, snapshot_config(settings), period=bad, now=NOW)
    with pytest.raises(UserError, match="not started"):
        await build_snapshot(store, snapshot_config(settings), period="2099-01", now=NOW)
    with pytest.raises(UserError, match="unknown spec"):
        await build_snapshot(store, snapshot_config(settings), period="2025-06", spec="other", now=NOW)


async def test_loader_detects_tampering_and_stale_temp_dirs_are_swept(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    stale = tmp_path / "snapshots" / "demo" / ".2025-06.tmp-deadbeef"
    stale.mkdir(parents=True)
    os.utime(stale, (time.time() - 7200, time.time() - 7200))  # a crashed attempt's, two hours ago
    fresh = stale.with_name(".2025-06.tmp-cafef00d")  # a concurrent builder's, just made: left alone
    fresh.mkdir()
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None and not stale.exists() and fresh.exists()
    q = res.path / "questions" / "ja.jsonl"
    q.write_text(q.read_text().replace("[ja]", "[xx]", 1))
    with pytest.raises(SnapshotError, match="sha256"):
        load_snapshot_dir(res.path)
    assert load_snapshot_dir(res.path, verify_hashes=False).manifest.snapshot_id == res.snapshot_id
