"""Kept % in result packs: the locality split's answers travel in `locality.jsonl`, metrics.json states kept % per
train and test language with n and a 95% CI over entities (the report's own figure for the same answers), a pack
without the file reads as before, `clkt submit` recomputes kept % from the letters against the snapshot's locality
split as frozen here, and bad locality answers are refused with one line and the store unchanged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clkt.errors import UserError
from clkt.evaluate.locality import locality_counts
from clkt.evaluate.results import ResultItem, Variant
from clkt.packs.format import FORMAT_VERSION, LOCALITY_FILE, MANIFEST_FILE, METRICS_FILE, PACK_FILES, LocalityRow
from clkt.packs.metrics import compute_metrics, first_difference
from clkt.packs.pack import read_pack, sort_key
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.data import JobInfo
from clkt.report.locality import kept_langs, pooled_kept
from tests.cli._in_process import clkt
from tests.inject._fixtures import SNAPSHOT_ID
from tests.packs._packs import (
    LANGS,
    LOCALITY_QIDS,
    LOST_QID,
    TEST_QIDS,
    assert_refused,
    locality_rows,
    make_pack,
    make_store,
    rows,
    submitted,
)

pytestmark = pytest.mark.usefixtures("wide_console")

SCORER = "option-loglik"


def _many(*, lost_en: int = 2, entities: int = 12) -> list[LocalityRow]:
    """One locality question per entity (ids 1..`entities`), base right on all; injected wrong on the first
    `lost_en` entities in en only: en keeps `entities - lost_en` of `entities`, fr all."""
    return [
        LocalityRow(train_lang="en", scorer=SCORER, variant=variant, lang=lang, qid=1000 + e, entity_id=e,
                    domain="movies", predicted="A", correct=variant == "base" or lang != "en" or e > lost_en,
                    split="locality")
        for variant in ("base", "injected") for lang in LANGS for e in range(1, entities + 1)
    ]


def _cells(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["lang"]: c for c in metrics["scorers"][SCORER]["locality"]}


def test_a_pack_with_locality_answers_reads_back_and_states_kept_percent(tmp_path: Path) -> None:
    loc = _many()
    sha = make_pack(tmp_path / "pack", locality=loc)
    assert make_pack(tmp_path / "pack.tar.gz", locality=loc) == sha  # one identity in either form
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == sorted([*PACK_FILES, LOCALITY_FILE])
    for form in ("pack", "pack.tar.gz"):
        pack = read_pack(tmp_path / form)
        assert pack.sha256 == sha and LOCALITY_FILE in pack.manifest.files
        assert pack.locality == sorted(loc, key=sort_key) and pack.predictions == sorted(rows(), key=sort_key)
    line = json.loads((tmp_path / "pack" / LOCALITY_FILE).read_text().splitlines()[0])
    assert line["split"] == "locality" and {"train_lang", "scorer", "variant", "lang", "qid", "entity_id"} <= set(line)
    cells = _cells(pack.claimed_metrics)
    en, fr = cells["en"], cells["fr"]
    assert (en["train_lang"], en["n"], en["right_before"], en["kept"], en["lost"], en["entities"]) == ("en", 12, 12, 10, 2, 12)
    assert en["rate"] == 10 / 12 and not en["too_few"]
    assert en["ci"][0] < 10 / 12 < en["ci"][1] <= 1  # entities resampled: the interval opens
    assert (fr["rate"], fr["ci"], fr["too_few"]) == (1.0, [1.0, 1.0], False)  # nothing lost: no draw moves it
    # the claims are a function of the answers: recomputed, they agree
    again = compute_metrics(pack.predictions, LANGS, format_version=FORMAT_VERSION, locality=pack.locality,
                            snapshot_id=SNAPSHOT_ID)
    assert first_difference(pack.claimed_metrics, again.model_dump(mode="json")) is None


def test_under_the_minimum_a_cell_is_too_few() -> None:
    m = compute_metrics(rows(), LANGS, format_version=FORMAT_VERSION, locality=_many(lost_en=1, entities=4),
                        snapshot_id=SNAPSHOT_ID).model_dump(mode="json")
    assert {c["lang"]: (c["right_before"], c["too_few"]) for c in m["scorers"][SCORER]["locality"]} == {
        "en": (4, True), "fr": (4, True)}


def test_a_pack_without_locality_answers_reads_as_before(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack")
    pack = read_pack(tmp_path / "pack")
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == sorted(PACK_FILES)
    assert set(pack.manifest.files) == {"predictions.jsonl", "metrics.json"} and pack.locality == []
    claimed = json.loads((tmp_path / "pack" / METRICS_FILE).read_text())
    assert "locality" not in claimed["scorers"][SCORER]  # no figure, not an empty one
    recomputed = compute_metrics(pack.predictions, LANGS, format_version=FORMAT_VERSION, snapshot_id=SNAPSHOT_ID)
    assert first_difference(claimed, recomputed.model_dump(mode="json")) is None


def test_kept_percent_in_a_pack_is_the_reports_and_the_leaderboards() -> None:
    """The same answers as a job's: the pack's cell, the report's cell of that job and a leaderboard row of that one
    job and language are one number, with one interval."""
    loc = _many()
    items = [ResultItem(qid=r.qid, lang=r.lang, variant=Variant(r.variant), scorer=r.scorer, split="locality",
                        predicted=r.predicted, correct=r.correct) for r in loc]
    counts = locality_counts(items, {r.qid: r.entity_id for r in loc})  # what the job keeps in its summary
    job = JobInfo(job_id=7, model="tiny", strategy="cpt-lora", train_lang="en", status="done", locality=counts)
    report = {k.lang: k for k in kept_langs([job], snapshot_id=SNAPSHOT_ID, seed=0, samples=BOOTSTRAP_SAMPLES)}
    cells = _cells(compute_metrics(rows(), LANGS, format_version=FORMAT_VERSION, locality=loc,
                                   snapshot_id=SNAPSHOT_ID).model_dump(mode="json"))
    for lang in LANGS:
        r, c = report[lang], cells[lang]
        assert (c["n"], c["right_before"], c["kept"], c["lost"], c["rate"]) == (r.n, r.base_right, r.kept, r.lost, r.rate)
        assert r.ci is not None and c["ci"] == list(r.ci)
        board = pooled_kept([(SNAPSHOT_ID, {SCORER: {lang: counts[SCORER][lang].model_dump()}})], scorer=SCORER, seed=0,
                            samples=BOOTSTRAP_SAMPLES)
        assert board is not None and (board.value, board.n) == (r.rate, r.base_right) and board.ci == r.ci


def _rehash(pack: Path, name: str, edit: Callable[[str], str]) -> Path:
    """Edit one file of a pack folder and list its new sha256 and size in the manifest (a pack as a writer made it)."""
    f = pack / name
    f.write_text(edit(f.read_text()))
    data = json.loads((pack / MANIFEST_FILE).read_text())
    data["files"][name] = {"sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "bytes": f.stat().st_size}
    (pack / MANIFEST_FILE).write_text(json.dumps(data))
    return pack


def _unknown_split(tmp_path: Path) -> Path:
    make_pack(tmp_path / "pack", locality=locality_rows())
    return _rehash(tmp_path / "pack", LOCALITY_FILE, lambda t: t.replace('"split":"locality"', '"split":"control"', 1))


def test_an_unknown_split_is_refused_when_read(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"locality\.jsonl:1: not a locality answer \(split: Input should be 'locality'\)"):
        read_pack(_unknown_split(tmp_path))


async def test_a_pack_with_locality_answers_is_stored_with_kept_percent_from_its_letters(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, known_by={"tiny": [7, 8], "other": [7]})
    honest = locality_rows()
    lie = [r.model_copy(update={"correct": True}) for r in honest]  # the lost question claimed kept
    sha = make_pack(tmp_path / "pack", locality=lie)  # its metrics.json computed from the lie
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "does not match its predictions (scorers.option-loglik.locality[0]." in res.stderr
    assert "2 answers' `correct` disagreed with their letter" in res.stderr  # en and fr, the injected LOST_QID
    assert ("option-loglik, trained in en: kept % of the questions about entities the target knew (right before "
            "injection, still right after) en too few (n = 3); fr too few (n = 3)") in res.stdout
    (row,) = submitted(tmp_path)
    cells = _cells(json.loads(row[3]))
    assert row[0] == sha and row[2] == 0
    assert {lang: (c["n"], c["right_before"], c["kept"], c["lost"], c["too_few"]) for lang, c in cells.items()} == {
        lang: (3, 3, 2, 1, True) for lang in LANGS}  # the letters', not the claim's
    assert cells["en"]["rate"] == 2 / 3 and cells["en"]["entities"] == 2


async def test_a_pack_without_locality_answers_is_stored_as_before(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path, known_by={"tiny": [7, 8]})
    make_pack(tmp_path / "pack")
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and "kept %" not in res.stdout  # no figure, no warning: claims match
    (row,) = submitted(tmp_path)
    assert row[2] == 1 and "locality" not in json.loads(row[3])["scorers"][SCORER]


def _pack_with(tmp_path: Path, loc: list[LocalityRow]) -> Path:
    make_pack(tmp_path / "pack", locality=loc)
    return tmp_path / "pack"


def _changed_export(tmp_path: Path) -> Path:
    f = tmp_path / "snap" / "locality" / "questions" / "fr.jsonl"
    f.write_text(f.read_text().replace('"answer":"A"', '"answer":"B"'))
    return _pack_with(tmp_path, locality_rows())


UNKNOWN = 12345
BAD: list[tuple[str, dict[str, list[int]] | None, Callable[[Path], Path], str]] = [
    ("unknown locality question", {"tiny": [7, 8]},
     lambda t: _pack_with(t, [*locality_rows()[:-1], locality_rows()[-1].model_copy(update={"qid": UNKNOWN})]),
     f"locality.jsonl: question {UNKNOWN} is not in snapshot {SNAPSHOT_ID}'s locality split"),
    ("a test question as a locality one", {"tiny": [7, 8]},
     lambda t: _pack_with(t, [*locality_rows()[:-1], locality_rows()[-1].model_copy(update={"qid": min(TEST_QIDS)})]),
     "is not in snapshot"),
    ("an entity the target did not know", {"tiny": [7], "other": [8]}, lambda t: _pack_with(t, locality_rows()),
     "which the locality split does not list as known by tiny"),
    ("a locality answer missing", {"tiny": [7, 8]}, lambda t: _pack_with(t, locality_rows()[1:]),
     "locality.jsonl: question"),
    ("a locality answer twice", {"tiny": [7, 8]}, lambda t: _pack_with(t, [*locality_rows(), locality_rows()[-1]]),
     "is answered twice (en, option-loglik, injected, fr)"),
    ("an unknown split", {"tiny": [7, 8]}, _unknown_split,
     "locality.jsonl:1: not a locality answer (split: Input should be 'locality')"),
    ("no locality split here", None, lambda t: _pack_with(t, locality_rows()),
     f"it holds locality.jsonl, and snapshot {SNAPSHOT_ID} has no locality split here"),
    ("the split's files changed here", {"tiny": [7, 8]}, _changed_export,
     "locality/questions/fr.jsonl here does not match its sha256 in the stored manifest"),
]


@pytest.mark.parametrize(("known_by", "make", "line"), [(k, m, line) for _, k, m, line in BAD], ids=[n for n, *_ in BAD])
async def test_bad_locality_answers_are_refused_with_one_line_and_the_store_unchanged(
    tmp_path: Path, known_by: dict[str, list[int]] | None, make: Callable[[Path], Path], line: str,
) -> None:
    assert_refused(tmp_path, await make_store(tmp_path, known_by=known_by), make, line)


def test_the_fixture_split_is_what_the_tests_assume() -> None:
    assert LOST_QID in LOCALITY_QIDS and len(locality_rows()) == 2 * 2 * len(LOCALITY_QIDS) == 12


def test_a_snapshot_read_from_the_hub_has_no_locality_split(tmp_path: Path) -> None:
    """The locality split is never published: a snapshot folder rebuilt from a published one (whose frozen manifest
    names a locality split) loads without one, so `clkt evaluate hf://...` runs and its pack has no locality.jsonl."""
    from clkt.packs.hub import _rebuild, parse_hub_ref
    from clkt.snapshots.layout import QuestionRow, docs_path, load_snapshot_dir, questions_path
    from tests.inject._fixtures import add_locality_split, write_tiny_snapshot

    frozen = add_locality_split(write_tiny_snapshot(tmp_path / "frozen"), known_by={"tiny": [7, 8]})
    raw = tmp_path / "published"
    (raw / "hf" / "data").mkdir(parents=True)
    (raw / MANIFEST_FILE).write_bytes((frozen / MANIFEST_FILE).read_bytes())
    for lang in LANGS:
        lines = questions_path(frozen, lang).read_text().splitlines()
        for split, name in (("val", "validation"), ("test", "test")):
            mine = [line for line in lines if QuestionRow.model_validate_json(line).split == split]
            (raw / "hf" / "data" / f"qa_{lang}-{name}.jsonl").write_text("".join(f"{line}\n" for line in mine))
        (raw / "hf" / "data" / f"docs_{lang}-train.jsonl").write_bytes(docs_path(frozen, lang).read_bytes())
    assert load_snapshot_dir(frozen).locality_questions  # the frozen folder has the split
    _rebuild(raw, tmp_path / "rebuilt", parse_hub_ref("hf://owner/name"))
    data = load_snapshot_dir(tmp_path / "rebuilt")
    assert data.manifest.locality is None and data.locality_questions == {}
    assert data.manifest.snapshot_id == SNAPSHOT_ID and data.qids("test") == load_snapshot_dir(frozen).qids("test")


def test_clkt_evaluate_takes_the_locality_answers_from_the_jobs_predictions(tmp_path: Path) -> None:
    """The job keeps its locality answers only in its `predictions.jsonl` (split `locality`; the outcome has their
    counts): the pack's rows are those, with the snapshot's entity ids and domains, and nothing else."""
    from clkt.packs.runner import _locality
    from clkt.snapshots.layout import load_snapshot_dir
    from tests.inject._fixtures import add_locality_split, public_entity_id, write_tiny_snapshot

    snap = load_snapshot_dir(add_locality_split(write_tiny_snapshot(tmp_path / "snap"), known_by={"tiny": [7, 8]}))
    job = tmp_path / "job"
    job.mkdir()
    answers = [ResultItem(qid=q, lang=lang, variant=v, scorer=SCORER, split="locality", predicted="A", correct=True,
                          raw="A") for q in LOCALITY_QIDS for lang in LANGS for v in Variant]
    answers += [ResultItem(qid=q, lang="en", variant=Variant.base, scorer=SCORER, split="test", predicted="A",
                           correct=False) for q in TEST_QIDS]  # the real questions: in predictions.jsonl, not here
    (job / "predictions.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in answers))
    got = _locality(snap, [("en", job)])
    assert len(got) == len(answers) - len(TEST_QIDS) == 12
    assert {(r.qid, r.entity_id, r.domain, r.split, r.train_lang) for r in got} == {
        (q, public_entity_id(e), "movies", "locality", "en") for q, (e, _) in LOCALITY_QIDS.items()}
    plain = load_snapshot_dir(write_tiny_snapshot(tmp_path / "plain"))
    assert _locality(plain, [("en", job)]) == []  # a snapshot without the split: no locality rows
    assert _locality(snap, [("en", tmp_path / "no-job")]) == []  # a job folder without predictions.jsonl
