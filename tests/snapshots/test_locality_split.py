"""The locality split's files: written by `write_locality`, read back per target, refused when inconsistent;
a snapshot without one has no `locality` in its manifest (older manifests read the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clkt.errors import SnapshotError
from clkt.snapshots.layout import MANIFEST_FILE, QuestionRow, SnapshotManifest, load_snapshot_dir
from clkt.snapshots.locality import locality_path, write_locality
from tests.inject._fixtures import add_locality_split, public_entity_id, public_qid, write_tiny_snapshot


def test_a_snapshot_without_a_locality_split_is_unchanged(tmp_path: Path) -> None:
    root = write_tiny_snapshot(tmp_path / "s")
    assert "locality" not in json.loads((root / MANIFEST_FILE).read_text())
    data = load_snapshot_dir(root, verify_hashes=False)
    assert data.locality_questions == {} and data.locality_questions_for("en", "gemma-3-270m") == []


def test_the_locality_split_is_read_back_per_target(tmp_path: Path) -> None:
    root = add_locality_split(write_tiny_snapshot(tmp_path / "s"), known_by={"gemma-3-270m": [7], "other": [7, 8]})
    data = load_snapshot_dir(root, verify_hashes=False)
    info = data.manifest.locality
    assert info is not None and (info.entities, info.questions) == (2, 3)
    assert len(data.locality_questions_for("fr")) == 3
    mine = data.locality_questions_for("en", "gemma-3-270m")
    assert {r.qid for r in mine} == {public_qid(71, 7), public_qid(72, 7)}  # only the entity it knew
    assert len(data.locality_questions_for("en", "other")) == 3
    assert data.locality_questions_for("en", "unknown-target") == []
    # never among the real questions
    assert not {r.qid for r in data.questions_for("en")} & {r.qid for r in data.locality_questions_for("en")}


def test_a_locality_qid_shared_with_a_real_question_is_refused(tmp_path: Path) -> None:
    root = add_locality_split(write_tiny_snapshot(tmp_path / "s"), known_by={"t": [7, 8]})
    real = load_snapshot_dir(root, verify_hashes=False).questions_for("en")[0]
    for lang in ("en", "fr"):
        path = locality_path(root, lang)
        rows = [QuestionRow.model_validate_json(line) for line in path.read_text().splitlines()]
        rows[0] = rows[0].model_copy(update={"qid": real.qid})
        path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    with pytest.raises(SnapshotError, match=r"locality/questions/en\.jsonl repeats a qid or shares one"):
        load_snapshot_dir(root, verify_hashes=False)


def test_write_locality_refuses_languages_that_differ_and_unknown_entities(tmp_path: Path) -> None:
    row = QuestionRow(qid=public_qid(71, 7), entity_id=public_entity_id(7), domain="movies", lang="en", split="test",
                      question="q?", options=["a", "b", "c", "d"], answer="A", answer_index=0, slot="s71")
    with pytest.raises(SnapshotError, match="fr does not hold the same questions as en"):
        write_locality(tmp_path, {"en": [row], "fr": []}, known_by={"t": [public_entity_id(7)]})
    with pytest.raises(SnapshotError, match="known by no target"):
        write_locality(tmp_path, {"en": [row]}, known_by={"t": [1]})
    assert write_locality(tmp_path, {"en": []}, known_by={}) == ([], None)
    files, info = write_locality(tmp_path, {"en": [row]}, known_by={"t": [public_entity_id(7), 5], "u": [5]})
    assert files == ["locality/questions/en.jsonl"]
    assert info is not None and info.known_by == {"t": [public_entity_id(7)]}  # targets and ids outside the split dropped
    raw = json.loads((write_tiny_snapshot(tmp_path / "m") / MANIFEST_FILE).read_text())
    manifest = SnapshotManifest.model_validate_json(json.dumps({**raw, "locality": info.model_dump()}))
    assert manifest.locality == info and "locality" in manifest.model_dump(mode="json")

