"""A build's locality split from the store: the period's `known` entities with translated questions, known by a
spec target, at most `snapshot.locality_entities`, written under `locality/` and listed in the manifest; the
real selection and the snapshot's id do not change."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, build_snapshot
from clkt.snapshots.export import export_format
from clkt.snapshots.ids import stable_entity_id
from clkt.snapshots.layout import MANIFEST_FILE, load_snapshot_dir
from clkt.snapshots.stored import load_snapshot
from storage.engine import Store
from storage.models import EntityStatus
from tests.snapshots.factories import LANGS, add_ready_entity, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)
TARGET = "gemma-3-270m"  # the demo spec's target


async def _known(store: Store, external_id: str, **kw: object) -> int:
    args: dict = {"domain": "movies", "source": "tmdb", "occurred_at": JUNE, "known_by": (TARGET,), **kw}
    return await add_ready_entity(store, external_id=external_id, status=EntityStatus.known, **args)


async def _build(root: Path, *, known: bool, locality_entities: int) -> tuple[str, Path]:
    root.mkdir()
    settings = make_settings(root, locality_entities=locality_entities)
    async with Store(url=f"sqlite+aiosqlite:///{root / 's.db'}") as store:
        await fill_period(store, month_start=JUNE, per_domain=3)
        if known:
            for k in ("k1", "k2", "k3"):
                await _known(store, k)
            await _known(store, "may", occurred_at=datetime(2025, 5, 30, tzinfo=UTC))  # another period
            await _known(store, "noq", n_questions=0)  # no question to ask
            await _known(store, "other", targets=("other-model",), known_by=("other-model",))  # not a spec target
        res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
        assert res.status is BuildStatus.frozen and res.path is not None and res.snapshot_id
        async with store.session() as s:  # the rows it was frozen from still hash to its id
            loaded = await load_snapshot(s, res.snapshot_id)
        assert loaded.content.content_sha256 == loaded.row.content_sha256
        # a native re-export from the store has no locality split, and its manifest says so
        again = root / "again"
        export_format(loaded.content, loaded.manifest, "native", again, built_at="x", clkt_version="x")
        assert load_snapshot_dir(again).manifest.locality is None and not (again / "locality").exists()
        return res.snapshot_id, res.path


async def test_the_build_writes_the_known_entities_questions_as_the_locality_split(tmp_path: Path) -> None:
    snapshot_id, path = await _build(tmp_path / "a", known=True, locality_entities=2)
    data = load_snapshot_dir(path)  # the locality files are listed and hashed in the manifest
    info = data.manifest.locality
    assert info is not None and (info.entities, info.questions) == (2, 6)  # the bound: 2 of the 3 eligible
    assert set(info.known_by) == {TARGET} and len(info.known_by[TARGET]) == 2
    eligible = {stable_entity_id("tmdb", k) for k in ("k1", "k2", "k3")}
    assert set(info.known_by[TARGET]) <= eligible
    assert "locality/questions/en.jsonl" in data.manifest.files
    en = {q.qid: q for q in data.locality_questions_for("en", TARGET)}
    assert len(en) == 6 and {q.entity_id for q in en.values()} == set(info.known_by[TARGET])
    for lang in LANGS:
        rows = data.locality_questions_for(lang)
        assert {q.qid for q in rows} == set(en)
        for q in rows:  # the options shuffled, the same letter in every language, the right option still right
            assert q.split == "test" and q.answer == en[q.qid].answer and "-right-" in q.text_answer
    # never trained on, never among the real questions
    assert not {d.entity_id for d in data.docs_for("en")} & eligible
    assert not set(en) & set(data.qids())
    # the real selection and the id are those of the same store without known entities
    plain_id, plain_path = await _build(tmp_path / "b", known=False, locality_entities=2)
    assert plain_id == snapshot_id
    assert "locality" not in json.loads((plain_path / MANIFEST_FILE).read_text())  # none to take: no split
    assert not (plain_path / "locality").exists()


async def test_locality_entities_zero_builds_no_locality_split(tmp_path: Path) -> None:
    _, path = await _build(tmp_path / "a", known=True, locality_entities=0)
    assert "locality" not in json.loads((path / MANIFEST_FILE).read_text()) and not (path / "locality").exists()
