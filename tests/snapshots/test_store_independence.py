"""What a snapshot publishes does not depend on the store's row ids: two stores holding the same entities,
inserted in different orders and numbered from different offsets, build the same snapshot, byte for byte."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, select
from sqlmodel import col

from clkt.services import snapshot_config
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import BUILD_FILE, load_snapshot_dir
from clkt.snapshots.stored import load_snapshot, question_rows_by_qid
from storage.engine import Store
from storage.models import Entity, EntityStatus, Question
from tests.snapshots.factories import SOURCES, add_ready_entity, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)

# (domain, source, external id, occurred_at): 3 per domain, 2 of which each quota takes
ENTITIES = [
    (domain, sources[i % len(sources)], f"{domain}{i}", JUNE + timedelta(days=i))
    for domain, sources in SOURCES.items()
    for i in range(3)
]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def _junk(store: Store, tag: str, n: int) -> list[int]:
    return [
        await add_ready_entity(store, domain="movies", source="tmdb", external_id=f"junk-{tag}{i}", occurred_at=JUNE,
                               n_questions=4, status=EntityStatus.discovered)
        for i in range(n)
    ]


async def _populate(store: Store, *, shuffled: bool) -> None:
    if not shuffled:
        for domain, source, ext, at in ENTITIES:
            await add_ready_entity(store, domain=domain, source=source, external_id=ext, occurred_at=at)
        return
    # other autoincrement offsets: junk rows first, some deleted again between the real inserts
    gone = await _junk(store, "a", 5)
    order = list(ENTITIES)
    random.Random(7).shuffle(order)
    for k, (domain, source, ext, at) in enumerate(order):
        if k % 4 == 0:
            gone += await _junk(store, f"b{k}-", 1)
        await add_ready_entity(store, domain=domain, source=source, external_id=ext, occurred_at=at)
    async with store.transaction() as s:
        await s.execute(delete(Entity).where(col(Entity.id).in_(gone)))


async def _row_ids(store: Store) -> dict[tuple[str, str, str], int]:
    async with store.session() as s:
        rows = (await s.execute(select(Entity.source, Entity.external_id, Question.slot, Question.id).join(
            Question, Question.entity_id == Entity.id))).all()
    return {(src, ext, slot): qid for src, ext, slot, qid in rows}


async def test_two_stores_with_different_row_ids_build_identical_snapshots(tmp_path: Path) -> None:
    built = []
    for run, shuffled in (("a", False), ("b", True)):
        root = tmp_path / run
        root.mkdir()
        settings = make_settings(root)
        async with Store(url=f"sqlite+aiosqlite:///{root / 's.db'}") as store:
            await _populate(store, shuffled=shuffled)
            res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW if run == "a" else NOW.replace(day=9))
            assert res.path is not None and res.snapshot_id is not None, res.describe()
            async with store.session() as s:
                loaded = await load_snapshot(s, res.snapshot_id)  # re-assembled from the rows: still hashes right
                rows_by_qid = await question_rows_by_qid(s, res.snapshot_id)
            built.append((res.snapshot_id, _files(res.path), load_snapshot_dir(res.path), await _row_ids(store),
                          rows_by_qid, loaded.content.content_sha256))
    (id_a, files_a, data_a, rows_a, map_a, sha_a), (id_b, files_b, data_b, rows_b, map_b, sha_b) = built
    # the stores really numbered the same questions differently
    assert rows_a.keys() >= {k for k in rows_b if not k[1].startswith("junk")}
    assert sum(rows_a[k] != rows_b[k] for k in rows_a) >= len(rows_a) // 2
    # ... yet the snapshot is the same: id, hash and every file but build.json
    assert id_a == id_b and sha_a == sha_b
    assert files_a.keys() == files_b.keys() and len(files_a) > 10
    assert sorted(k for k in files_a if files_a[k] != files_b[k]) == [BUILD_FILE]
    # the published ids are the content-derived ones, never a row id
    en = data_a.questions_for("en")
    by_key = {stable_qid(q.source, d.name.split(" ", 1)[1], q.slot): q for q in en for d in data_a.docs_for("en")
              if d.entity_id == q.entity_id}
    assert set(by_key) == {q.qid for q in en}
    for d in data_a.docs_for("en"):
        assert d.entity_id == stable_entity_id(d.source, d.name.split(" ", 1)[1])
    assert all(0 <= q.qid < 2**52 for q in en)
    # each store maps the same public qids back to its own rows
    assert map_a.keys() == map_b.keys() == set(data_b.qids())
    assert map_a != map_b
    assert set(map_a.values()) <= set(rows_a.values()) and set(map_b.values()) <= set(rows_b.values())
