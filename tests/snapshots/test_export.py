"""Export formats (reference layout, datasets, lm-eval) and atomicity of the build's export."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from clkt.config import EMBEDDED_TARGET
from clkt.errors import DiskFullError, UserError
from clkt.evaluate.loglik import loglik_item
from clkt.services import snapshot_config
from clkt.snapshots import export as export_mod
from clkt.snapshots.builder import build_snapshot
from clkt.snapshots.export import export_format
from clkt.snapshots.formats import OPTIONS_TASK_SUFFIX, lm_eval_task_name
from clkt.snapshots.stored import LoadedSnapshot, load_snapshot
from storage.engine import Store
from storage.models import Event, Snapshot, SnapshotItem
from tests.snapshots.factories import LANGS, fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 7, 3, tzinfo=UTC)


async def _built(store: Store, tmp_path: Path) -> tuple[Path, LoadedSnapshot]:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None and res.snapshot_id is not None
    async with store.session() as s:
        return res.path, await load_snapshot(s, res.snapshot_id)


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_reference_layout_fields(store: Store, tmp_path: Path) -> None:
    root, snap = await _built(store, tmp_path)
    for train in LANGS:
        base = root / "reference" / train
        docs = _jsonl(base / "train_doc.jsonl")
        assert len(docs) == 8 and all({"text", "source"} <= d.keys() and d["text"] for d in docs)
        assert all(str(d["text"]).startswith(f"[{train}]") for d in docs)
        val, test = _jsonl(base / "val_mc.jsonl"), _jsonl(base / "test_mc.jsonl")
        n_val = len(snap.content.questions_in("en", "val"))
        # every language of each validation question, as the reference layout has them (not the train one only)
        assert len(val) == n_val * len(LANGS) and len(test) == (24 - n_val) * len(LANGS)
        for row in val + test:
            assert {"question", "answer", "text_answer", "train_lang", "test_lang", "source", "qid"} <= row.keys()
            assert row["train_lang"] == train and row["answer"] in "ABCD"
            lines = str(row["question"]).split("\n")
            assert [ln[:5] for ln in lines[1:]] == ["- A. ", "- B. ", "- C. ", "- D. "]
            assert lines[1 + "ABCD".index(str(row["answer"]))] == f"- {row['answer']}. {row['text_answer']}"
        assert {r["test_lang"] for r in val} == set(LANGS)
        by_lang = {lang: sorted(r["qid"] for r in val if r["test_lang"] == lang) for lang in LANGS}
        assert all(q == by_lang[train] for q in by_lang.values())  # the same questions in each language
        assert {r["test_lang"] for r in test} == set(LANGS)
        assert not {r["qid"] for r in val} & {r["qid"] for r in test}
    card = (root / "README.md").read_text(encoding="utf-8")
    assert "chosen on the train language's validation questions only" in card
    assert "'docs_<lang>'" in card and "'qa_<lang>'" in card


async def test_hf_export_loads_with_datasets(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets

    _, snap = await _built(store, tmp_path)
    out = tmp_path / "hf-out"
    export_format(snap.content, snap.manifest, "hf", out, built_at="x", clkt_version="0")
    ds = datasets.load_dataset(str(out), "qa_fr", cache_dir=str(tmp_path / "hf-cache"))
    assert set(ds) == {"validation", "test"}
    assert len(ds["validation"]) + len(ds["test"]) == 24
    row = ds["test"][0]
    assert row["options"][row["answer_index"]] == row["text_answer"] and row["lang"] == "fr"
    docs = datasets.load_dataset(str(out), "docs_ja", cache_dir=str(tmp_path / "hf-cache"))
    assert len(docs["train"]) == 8
    # the plain json loader on the native files works too
    native = datasets.load_dataset(
        "json", data_files={"test": str(snap.row.export_path) + "/questions/en.jsonl"}, cache_dir=str(tmp_path / "hf-cache")
    )
    assert len(native["test"]) == 24


async def test_lm_eval_task_manager_loads_the_tasks(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    from lm_eval.tasks import TaskManager, get_task_dict

    root, snap = await _built(store, tmp_path)
    tm = TaskManager(include_path=str(root / "lm_eval"), include_defaults=False)
    names = [lm_eval_task_name(snap.content, lang) for lang in LANGS]
    assert set(names) <= set(tm.all_tasks)
    tasks = get_task_dict([names[1]], tm)
    task = tasks[names[1]]
    docs = list(task.test_docs())
    assert len(docs) == len(snap.content.questions_in("ja", "test"))
    doc = docs[0]
    assert task.doc_to_target(doc) == doc["answer_index"]
    assert task.doc_to_choice(doc) == ["A", "B", "C", "D"]
    assert task.doc_to_text(doc).endswith("\nAnswer:") and "- D. " in task.doc_to_text(doc)
    # the option-text task: what clkt's option-loglik scores (the bare question, the cue, each option's text)
    opt_names = [n + OPTIONS_TASK_SUFFIX for n in names]
    assert set(opt_names) <= set(tm.all_tasks)
    opt = get_task_dict([opt_names[1]], tm)[opt_names[1]]
    odoc = next(iter(opt.test_docs()))
    q = snap.content.questions_in("ja", "test")[0]
    item = loglik_item(EMBEDDED_TARGET, None, q.question, q.options, "ja")
    assert opt.doc_to_text(odoc) == item.context.text  # byte for byte the context option-loglik scores
    assert [opt.config.target_delimiter + c for c in opt.doc_to_choice(odoc)] == list(item.continuations)
    assert opt.doc_to_target(odoc) == q.answer_index
    assert [m["metric"] for m in opt.config.metric_list] == ["acc", "acc_norm"]


async def test_export_failure_midway_leaves_nothing(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)

    def boom(*_a: object, **_k: object) -> list[str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_mod, "write_hf", boom)  # after native + reference were written
    with pytest.raises(DiskFullError):
        await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    spec_dir = tmp_path / "snapshots" / "demo"
    assert list(spec_dir.iterdir()) == []  # no half folder, no temporary folder
    async with store.session() as s:
        assert (await s.execute(select(Snapshot))).first() is None
        assert (await s.execute(select(SnapshotItem))).first() is None
        assert (await s.execute(select(Event))).first() is None
    monkeypatch.undo()
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None and res.path.is_dir()


async def test_commit_failure_removes_the_published_folder(store: Store, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)

    async def hook(session: object, snap: Snapshot) -> None:
        raise RuntimeError("crash after the files were written")

    with pytest.raises(RuntimeError):
        await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW, on_frozen=hook)
    assert list((tmp_path / "snapshots" / "demo").iterdir()) == []
    async with store.session() as s:
        assert (await s.execute(select(Snapshot))).first() is None


async def test_export_formats_into_user_folder(store: Store, tmp_path: Path) -> None:
    _, snap = await _built(store, tmp_path)
    for fmt in ("native", "reference", "lm-eval"):
        files = export_format(snap.content, snap.manifest, fmt, tmp_path / fmt, built_at="x", clkt_version="0")
        assert files and all((tmp_path / fmt / f).is_file() for f in files)
    assert (tmp_path / "reference" / "fr" / "test_mc.jsonl").is_file()
    # the native export from the store reproduces the build's bytes (build.json aside)
    built = Path(str(snap.row.export_path))
    for p in built.rglob("*.jsonl"):
        assert (tmp_path / "native" / p.relative_to(built)).read_bytes() == p.read_bytes()
    assert (tmp_path / "native" / "manifest.json").read_bytes() == (built / "manifest.json").read_bytes()
    with pytest.raises(UserError, match="not an empty folder"):
        export_format(snap.content, snap.manifest, "hf", tmp_path / "native", built_at="x", clkt_version="0")
    with pytest.raises(UserError, match="unknown export format"):
        export_format(snap.content, snap.manifest, "parquet", tmp_path / "p", built_at="x", clkt_version="0")


async def test_an_export_error_names_the_real_folder(store: Store, tmp_path: Path) -> None:
    """The staging folder's temporary name (`.<out>.tmp-…`) never reaches the user: the error names `--out`."""
    from clkt.errors import SnapshotError

    _, snap = await _built(store, tmp_path)
    out = tmp_path / ("o" * 250)  # a legal name whose staging twin is too long for the filesystem
    with pytest.raises(SnapshotError) as e:
        export_format(snap.content, snap.manifest, "native", out, built_at="x", clkt_version="0")
    assert str(out) in str(e.value) and ".tmp-" not in str(e.value), str(e.value)
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


async def test_the_entities_facts_are_frozen_in_facts_jsonl_and_in_no_export(store: Store, tmp_path: Path) -> None:
    from clkt.facts import FilmFacts
    from clkt.snapshots.ids import stable_entity_id
    from clkt.snapshots.layout import FACTS_FILE, load_snapshot_dir
    from storage.models import Entity

    settings = make_settings(tmp_path)
    await fill_period(store, month_start=JUNE, per_domain=2)
    facts = FilmFacts(title="Velmora Tide", release_date=date(2025, 6, 2), directors=["Osric Palandri"], runtime_min=97).model_dump(mode="json")
    async with store.session() as s:
        ents = list((await s.execute(select(Entity))).scalars())
        for e in ents:
            e.facts = facts if e.domain == "movies" else {}
        await s.commit()
        movies = {stable_entity_id(e.source, e.external_id) for e in ents if e.domain == "movies"}
    res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=NOW)
    assert res.path is not None
    data = load_snapshot_dir(res.path)  # facts.jsonl is hashed in the manifest like every other file
    assert FACTS_FILE in data.manifest.files
    assert data.facts and set(data.facts) <= movies and all(f == facts for f in data.facts.values())
    assert {d.entity_id for d in data.docs_for("en")} & movies == set(data.facts)
    # the open track's questions are asked from the facts, so their golds state them (held back as the MCQs are)
    open_files = {"open", "open_en-test.jsonl", "open_ja-test.jsonl", "open_fr-test.jsonl"} | {
        f"open-{lang}-test.jsonl" for lang in ("en", "ja", "fr")}
    exported = [p for p in res.path.rglob("*") if p.is_file() and p.name not in (FACTS_FILE, "manifest.json")
                and not open_files & {p.name, p.parent.name}]
    assert not any("Osric Palandri" in p.read_text(encoding="utf-8", errors="replace") for p in exported if p.suffix != ".arrow")
    assert "Osric Palandri" in (res.path / "open" / "en.jsonl").read_text(encoding="utf-8")
