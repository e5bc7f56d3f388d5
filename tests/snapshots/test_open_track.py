"""The open track frozen beside the MCQs: short-answer questions per entity (real and control) in every language,
hashed, listed in the manifest, regenerated from the store, exported to `datasets` and lm-eval; an entity without
questions counted, an empty gold refused, a corrupted file named, and a snapshot without a track loading as before."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from clkt.errors import SnapshotError
from clkt.facts import FilmFacts
from clkt.openqa.frozen import load_open_questions
from clkt.openqa.prompts import open_text
from clkt.openqa.score import Verdict, score
from clkt.services import snapshot_config
from clkt.snapshots import builder as builder_mod
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.export import export_format
from clkt.snapshots.formats import OPEN_TASK_SUFFIX, lm_eval_task_name
from clkt.snapshots.ids import stable_entity_id, stable_open_qid
from clkt.snapshots.layout import MANIFEST_FILE, load_snapshot_dir
from clkt.snapshots.open import attach_open
from clkt.snapshots.stored import LoadedSnapshot, load_snapshot
from storage.engine import Store
from storage.models import Entity, Event
from tests.snapshots.factories import LANGS, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)
FILM = FilmFacts(title="Velmora Tide", release_date=date(2025, 6, 2), directors=["Osric Palandri"], runtime_min=97)


async def _build(store: Store, tmp_path: Path, facts: FilmFacts = FILM) -> tuple[Path, LoadedSnapshot, set[int]]:
    """A snapshot whose movies carry `facts` (the factories' other entities have none)."""
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    async with store.session() as s:
        ents = list((await s.execute(select(Entity))).scalars())
        for e in ents:
            e.facts = facts.model_dump(mode="json") if e.domain == "movies" else {}
        await s.commit()
        movies = {stable_entity_id(e.source, e.external_id) for e in ents if e.domain == "movies"}
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None and res.snapshot_id is not None
    async with store.session() as s:
        return res.path, await load_snapshot(s, res.snapshot_id), movies


async def test_the_open_track_is_frozen_hashed_and_regenerated(store: Store, tmp_path: Path) -> None:
    root, snap, movies = await _build(store, tmp_path)
    info = snap.manifest.open
    assert info is not None and info.engine == "open-facts-1"
    # each movie: director, release date, runtime (no cast); the 6 other entities have no facts: counted, frozen
    assert (info.entities, info.entities_without, info.questions, info.refused) == (2, 6, 6, 0)
    assert info.control_questions > 0
    async with store.session() as s:  # the freeze's event counts them too
        event = (await s.execute(select(Event).where(Event.kind == "snapshot.frozen"))).scalars().one()
    assert event.data["open"]["entities_without"] == 6
    assert {f"open/{lang}.jsonl" for lang in LANGS} | {f"control/open/{lang}.jsonl" for lang in LANGS} <= set(
        snap.manifest.files)
    assert load_snapshot_dir(root).manifest.open == info  # every file's hash checks
    real = load_open_questions(root)
    assert len(real) == 6 and {q.entity_id for q in real} == movies and all(q.split == "test" for q in real)
    for q in real:
        assert q.qid == stable_open_qid(q.entity_id, q.question.fact) and q.question.langs == tuple(sorted(LANGS))
        for lang in LANGS:
            assert score(q.question, lang, q.question.gold(lang).answer).verdict is Verdict.CORRECT
    by_fact = {q.question.fact: q.question for q in real}
    assert by_fact["film.director"].gold("ja").answer == "Osric Palandri"
    assert by_fact["film.release_date"].gold("fr").answer == "2 juin 2025"
    control = load_open_questions(root, control=True)
    assert len(control) == info.control_questions and {q.source for q in control} == {"control"}
    assert not {q.qid for q in control} & {q.qid for q in real}
    # the content hash covers the open rows: re-assembled from the store (load_snapshot checked the hash), and a
    # changed gold would give another id
    assert snap.content.open_questions and snap.content.content_sha256 == snap.row.content_sha256
    first = snap.content.open_questions[0]
    edited = dataclasses.replace(snap.content, open_questions=(first.model_copy(update={"answer": "x"}),
                                                               *snap.content.open_questions[1:]))
    assert edited.content_sha256 != snap.content.content_sha256


async def test_an_empty_gold_is_refused_never_frozen(store: Store, tmp_path: Path) -> None:
    blank = FILM.model_copy(update={"directors": ["   "]})
    root, snap, _ = await _build(store, tmp_path, blank)
    info = snap.manifest.open
    assert info is not None and info.refused == 2 and info.questions == 4  # each movie's director refused
    facts = {q.question.fact for q in load_open_questions(root)}
    assert facts == {"film.release_date", "film.runtime"}
    lines = (root / "open" / "en.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["answer"].strip() for line in lines)


async def test_a_corrupted_open_file_is_named(store: Store, tmp_path: Path) -> None:
    root, _, _ = await _build(store, tmp_path)
    path = root / "open" / "fr.jsonl"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # cut mid-row
    with pytest.raises(SnapshotError, match=r"open/fr\.jsonl does not match its sha256"):
        load_open_questions(root)
    with pytest.raises(SnapshotError, match=r"open/fr\.jsonl:\d+: invalid OpenRow"):
        load_open_questions(root, verify_hashes=False)
    path.write_bytes(b"\xff\xfe garbage\n")
    with pytest.raises(SnapshotError, match=r"open/fr\.jsonl is not UTF-8"):
        load_open_questions(root, verify_hashes=False)
    rows = [json.loads(line) for line in good.decode("utf-8").splitlines()]
    rows[0]["answer"] = "?!"  # valid JSON, a gold that is empty once normalised: refused as at generation
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SnapshotError, match=rf"open question {rows[0]['qid']} \(.+\) cannot be scored"):
        load_open_questions(root, verify_hashes=False)
    path.unlink()
    with pytest.raises(SnapshotError, match=r"open-track file open/fr\.jsonl is missing"):
        load_open_questions(root, verify_hashes=False)


async def test_a_snapshot_without_an_open_track_loads_unchanged(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a snapshot frozen before the track existed: no `open` key in manifest.json, no open file, the same id
    from the store, and the typed reader gives nothing."""
    monkeypatch.setattr(builder_mod, "attach_open", lambda content, **_k: content)
    root, snap, _ = await _build(store, tmp_path)
    assert "open" not in json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert not (root / "open").exists() and not (root / "control" / "open").exists()
    assert snap.manifest.open is None and not snap.content.open_questions  # load_snapshot: the hash still matches
    assert load_snapshot_dir(root).manifest.open is None
    assert load_open_questions(root) == [] and load_open_questions(root, control=True) == []


async def test_a_language_without_templates_gets_no_open_track(store: Store, tmp_path: Path) -> None:
    _, snap, _ = await _build(store, tmp_path)
    bare = dataclasses.replace(snap.content, open_questions=(), control_open=(), open_info=None)
    other = dataclasses.replace(bare, languages=("en", "de"))
    assert attach_open(other, start=JUNE.date(), end=NOW.date(), control_domains=[], per_domain=0) is other
    again = attach_open(bare, start=date(2025, 6, 1), end=date(2025, 7, 1), control_domains=snap.manifest.control.domains
                        if snap.manifest.control else [], per_domain=snap.manifest.control.per_domain
                        if snap.manifest.control else 0)
    assert again.open_info == snap.manifest.open and again.content_sha256 == snap.row.content_sha256


async def test_the_open_exports_load_in_datasets_and_lm_eval(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets
    from lm_eval.tasks import TaskManager, get_task_dict

    root, snap, _ = await _build(store, tmp_path)
    out = tmp_path / "hf-out"
    export_format(snap.content, snap.manifest, "hf", out, built_at="x", clkt_version="0")
    ds = datasets.load_dataset(str(out), "open_fr", cache_dir=str(tmp_path / "hf-cache"))
    assert set(ds) == {"test"} and len(ds["test"]) == 6
    row = ds["test"][0]
    assert row["lang"] == "fr" and row["answer"] and isinstance(row["aliases"], list)
    assert (root / "hf" / "data" / "open_ja-test.jsonl").is_file()  # the frozen tree's hf/ has it too
    assert "- question-answering" in (out / "README.md").read_text(encoding="utf-8")
    assert "`open/<lang>.jsonl`: the open track, 6 short-answer questions" in (root / "README.md").read_text("utf-8")
    tm = TaskManager(include_path=str(root / "lm_eval"), include_defaults=False)
    names = [lm_eval_task_name(snap.content, lang) + OPEN_TASK_SUFFIX for lang in LANGS]
    assert set(names) <= set(tm.all_tasks)
    task = get_task_dict([names[1]], tm)[names[1]]
    assert task.config.output_type == "generate_until"
    assert task.config.generation_kwargs["until"] == ["\n"] and task.config.generation_kwargs["max_gen_toks"] == 32
    docs = list(task.test_docs())
    rows = snap.content.open_in("ja")
    assert len(docs) == len(rows) == 6
    by_qid = {r.qid: r for r in rows}
    for doc in docs:
        r = by_qid[doc["qid"]]
        assert task.doc_to_text(doc) == open_text(r.question, "ja", chat=False)  # clkt's own base-model frame
        assert task.doc_to_target(doc) == [r.answer, *r.aliases]
    date_doc = next(d for d in docs if d["fact"] == "film.release_date")
    assert task.process_results(date_doc, ["2025-06-02"])["exact_match"] == 1.0  # an alias counts
    assert task.process_results(date_doc, ["2024-06-02"])["exact_match"] == 0.0


async def test_an_open_question_asking_a_validation_facts_is_validation_and_never_exported_as_test(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The facts held out for validation are held out in both formats: the open question asking a fact a
    validation MCQ of its entity asks is in the `val` split (the open track's checkpoint is chosen on it), counted
    in the manifest, the `validation` split of the datasets config, and left out of lm-eval's test task."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets

    _, snap, movies = await _build(store, tmp_path)
    movie = min(movies)
    # one of the movie's MCQs, in every language, made a validation question asking its director
    first = next(q for q in snap.content.questions if q.entity_id == movie)
    questions = tuple(q.model_copy(update={"split": "val", "slot": "director"}) if q.qid == first.qid else
                      q.model_copy(update={"split": "test"}) if q.entity_id == movie else q
                      for q in snap.content.questions)
    bare = dataclasses.replace(snap.content, questions=questions, open_questions=(), control_open=(), open_info=None)
    ctl = snap.manifest.control
    content = attach_open(bare, start=JUNE.date(), end=NOW.date(), control_domains=ctl.domains if ctl else [],
                          per_domain=ctl.per_domain if ctl else 0)
    assert content.open_info is not None and content.open_info.val_questions == 1
    val = [r for r in content.open_questions if r.split == "val"]
    assert {(r.entity_id, r.fact) for r in val} == {(movie, "film.director")} and len(val) == len(LANGS)
    assert all(r.split == "test" for r in content.control_open)
    assert content.content_sha256 != snap.content.content_sha256  # the split is part of what is frozen
    out = tmp_path / "hf-val"
    export_format(content, snap.manifest.model_copy(update={"open": content.open_info}), "hf", out, built_at="x",
                  clkt_version="0")
    ds = datasets.load_dataset(str(out), "open_en", cache_dir=str(tmp_path / "hf-cache"))
    assert (len(ds["validation"]), len(ds["test"])) == (1, 5)
    assert ds["validation"][0]["fact"] == "film.director"
    lm = tmp_path / "lm-val"
    export_format(content, snap.manifest.model_copy(update={"open": content.open_info}), "lm-eval", lm, built_at="x",
                  clkt_version="0")
    (data,) = lm.glob("**/open-en-test.jsonl")
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5 and all(r["split"] == "test" for r in rows)


async def test_a_snapshot_frozen_before_the_validation_split_regenerates_unchanged(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frozen by a version without the split (every open question in test, no `open.val_questions`), a snapshot
    whose open question asks a validation MCQ's fact still re-assembles from the store to its content hash: the
    split is applied only where the manifest says it was."""
    import clkt.snapshots.open as open_mod

    monkeypatch.setattr(open_mod, "split_open", lambda rows, _content: list(rows))  # as before the split
    _, snap, movies = await _build(store, tmp_path)
    assert snap.manifest.open is not None and snap.manifest.open.val_questions == 0
    held_out = [(q.entity_id, q.slot) for q in snap.content.questions if q.split == "val" and q.entity_id in movies]
    assert held_out, "the fixture's movies have a validation MCQ"
    monkeypatch.undo()
    # the director question of a movie now asks that validation MCQ's fact
    monkeypatch.setattr(open_mod, "mcq_slot", lambda fact: held_out[0][1] if fact == "film.director" else fact)
    async with store.session() as s:
        again = await load_snapshot(s, snap.row.id)  # raises where the content hash differs
    assert again.content.content_sha256 == snap.row.content_sha256
    assert all(r.split == "test" for r in again.content.open_questions)
    fresh = attach_open(dataclasses.replace(again.content, open_questions=(), control_open=(), open_info=None),
                        start=JUNE.date(), end=NOW.date(), control_domains=[], per_domain=0)
    assert {(r.entity_id, r.fact) for r in fresh.open_questions if r.split == "val"} == {(held_out[0][0], "film.director")}
