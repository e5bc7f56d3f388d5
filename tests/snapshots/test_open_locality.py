"""The locality split's short-answer questions (issue 47): a build asks the known entities' facts as the open track
does and freezes the rows beside the locality MCQs (`locality/open/<lang>.jsonl`, hashed, counted in
`manifest.locality.open_questions`); a job's target reads only the entities it knew; a snapshot without them (every
one frozen before) has none and no error; bad rows are refused before any file is written."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from clkt.errors import SnapshotError
from clkt.facts import FilmFacts
from clkt.openqa.frozen import load_open_questions, locality_open_questions
from clkt.openqa.score import Verdict, score
from clkt.services import snapshot_config
from clkt.snapshots.builder import BuildStatus, build_snapshot
from clkt.snapshots.ids import stable_entity_id, stable_open_qid
from clkt.snapshots.layout import MANIFEST_FILE, OpenRow, load_snapshot_dir
from storage.engine import Store
from storage.models import Entity, EntityStatus
from tests.inject._fixtures import add_locality_split, public_entity_id, write_tiny_snapshot
from tests.snapshots.factories import LANGS, add_ready_entity, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)
TARGET = "gemma-3-270m"
FILM = FilmFacts(title="Orlan Tide", release_date=date(2025, 6, 2), directors=["Ada Voss"], runtime_min=97)


async def _build(tmp_path: Path) -> Path:
    settings = make_settings(tmp_path, locality_entities=2)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
        await fill_period(store, month_start=JUNE, per_domain=2)
        for k in ("k1", "k2", "k3"):
            await add_ready_entity(store, external_id=k, domain="movies", source="tmdb", occurred_at=JUNE,
                                   known_by=(TARGET,), status=EntityStatus.known)
        async with store.session() as s:  # the known films carry facts
            for e in (await s.execute(select(Entity).where(Entity.status == EntityStatus.known))).scalars():
                e.facts = FILM.model_dump(mode="json")
            await s.commit()
        res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.status is BuildStatus.frozen and res.path is not None
    return res.path


async def test_the_build_freezes_the_known_entities_short_answer_questions(tmp_path: Path) -> None:
    root = await _build(tmp_path)
    data = load_snapshot_dir(root)  # every file's hash checks
    info = data.manifest.locality
    assert info is not None and info.entities == 2
    assert info.open_questions == 6  # 2 films x (director, release date, runtime)
    assert {f"locality/open/{lang}.jsonl" for lang in LANGS} <= set(data.manifest.files)
    known = set(info.known_by[TARGET])
    asked = load_open_questions(root, locality=True)
    assert len(asked) == 6 and {q.entity_id for q in asked} == known
    assert {q.question.fact for q in asked} == {"film.director", "film.release_date", "film.runtime"}
    for q in asked:
        assert q.qid == stable_open_qid(q.entity_id, q.question.fact) and q.question.langs == tuple(sorted(LANGS))
        assert all(score(q.question, lang, q.question.gold(lang).answer).verdict is Verdict.CORRECT for lang in LANGS)
    assert [q.qid for q in locality_open_questions(root, TARGET)] == [q.qid for q in asked]
    assert locality_open_questions(root, "another-target") == []  # it knew none of them
    # never among the test split's open questions (the known entities are not trained on)
    assert not known & {q.entity_id for q in load_open_questions(root)}
    assert known <= {stable_entity_id("tmdb", k) for k in ("k1", "k2", "k3")}


def _open(entity: int, lang: str, qid: int = 0) -> OpenRow:
    return OpenRow(qid=qid or stable_open_qid(public_entity_id(entity), "film.director"), entity_id=public_entity_id(entity),
                   domain="movies", source="fixture", lang=lang, split="test", fact="film.director", kind="name",
                   question=f"[{lang}] Who directed it?", answer="Ada Voss")


def test_a_snapshot_with_a_locality_split_but_no_open_questions_has_none(tmp_path: Path) -> None:
    root = add_locality_split(write_tiny_snapshot(tmp_path / "s"), known_by={"tiny": [7, 8]})
    manifest = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert "open_questions" not in manifest["locality"]  # 0 is left out: older manifests keep their bytes
    assert load_open_questions(root, locality=True) == [] and locality_open_questions(root, "tiny") == []
    assert not (root / "locality" / "open").exists()


@pytest.mark.parametrize(("rows", "why"), [
    ([_open(7, "en")], "same qids"),  # no French row
    ([_open(7, "en"), _open(7, "fr"), _open(7, "de")], "'de'"),
    ([_open(9, "en"), _open(9, "fr")], "outside the split"),  # entity 9 is not one of the split's
    ([_open(7, "en"), _open(7, "en"), _open(7, "fr"), _open(7, "fr")], "once each"),
])
def test_bad_open_locality_rows_are_refused_before_any_file(tmp_path: Path, rows: list[OpenRow], why: str) -> None:
    root = write_tiny_snapshot(tmp_path / "s")
    with pytest.raises(SnapshotError, match=why):
        add_locality_split(root, known_by={"tiny": [7, 8]}, open_rows=rows)
    assert not (root / "locality").exists()


def test_write_locality_counts_the_open_questions_per_language(tmp_path: Path) -> None:
    root = add_locality_split(write_tiny_snapshot(tmp_path / "s"), known_by={"tiny": [7], "other": [8]},
                              open_rows=[_open(e, lang) for e in (7, 8) for lang in ("en", "fr")])
    info = load_snapshot_dir(root).manifest.locality
    assert info is not None and info.open_questions == 2
    assert [q.entity_id for q in locality_open_questions(root, "tiny")] == [public_entity_id(7)]
    assert [q.entity_id for q in locality_open_questions(root, "other")] == [public_entity_id(8)]
    (root / "locality" / "open" / "fr.jsonl").write_text("", encoding="utf-8")  # edited after freezing
    with pytest.raises(SnapshotError, match=r"locality/open/fr\.jsonl"):
        load_open_questions(root, locality=True)
