"""The open track in the GPU job (issue 47): a tiny random model answers the snapshot's short-answer questions
before and after a toy injection (its LM head biased to say "Paris"), every answer scored by the normaliser, the
base answers shared through the base cache, the rows committed to `open_result`; a snapshot without the track,
or `[gpu] open_answers = false`, runs as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlmodel import col

import clkt.inject.open_pass as open_pass
from clkt.config import load_settings
from clkt.errors import SnapshotError
from clkt.evaluate.results import Variant
from clkt.inject.contract import JobSpec
from clkt.inject.job import InjectionJob
from clkt.layout import OPEN_PREDICTIONS_FILE
from clkt.openqa.frozen import load_open_questions
from clkt.openqa.results import OPEN_SCORER, UNSCORABLE, OpenResultItem, scored_item
from clkt.openqa.score import Verdict, score
from clkt.report.leaderboard import build_rows
from clkt.report.open_track import OPEN_TITLE
from clkt.report.writer import ReportData, render_tables, write_report
from clkt.snapshots.layout import OpenRow
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, enqueue_gpu_jobs
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot, known_names
from storage.models import GpuJob, OpenResult, QuestionResult
from storage.result_packs import result_packs
from tests.inject._fixtures import SNAPSHOT_ID, add_locality_split, public_entity_id, seed_store
from tests.inject._open_fixtures import add_open_track, open_qid
from tests.inject.test_toy_strategy import AlwaysB, registered, run_and_commit

TOY = "toy-paris"
WORD = "Paris"


class SaysParis(AlwaysB):
    """The toy of `test_toy_strategy` biased to another token: the model says "Paris"."""

    name = TOY

    def biased_tokens(self, tokenizer: Any) -> list[int]:
        return [tokenizer.convert_tokens_to_ids(WORD)]


@pytest.fixture()
def says_paris(monkeypatch: pytest.MonkeyPatch) -> Iterator[SaysParis]:
    # one token per answer: the injected model says "Paris" and stops (the stop rule's line break aside)
    monkeypatch.setattr(open_pass, "MAX_NEW_TOKENS", 1)
    with registered(SaysParis(), "toy: always says Paris") as injector:
        yield injector


def _settings(tmp_path: Path, model: Path, *, open_answers: bool = True) -> Any:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[spec]\nlanguages = ["en", "fr"]\nstrategies = ["{TOY}"]\n'
        f'[[spec.targets]]\nname = "tiny"\nmodel = "{model}"\ncutoff = "2024-01-01"\nscorers = ["letter-logprob"]\n'
        f'[gpu]\ndevices = ["cpu"]\nepochs = 1\ntorch_threads = 1\nopen_answers = {str(open_answers).lower()}\n',
        encoding="utf-8",
    )
    return load_settings(cfg, environ={})


def _spec(settings: Any, snapshot: Path, job_id: int, *, base_cache: Path | None = None) -> JobSpec:
    spec = JobSpec(job_id=job_id, snapshot_id=SNAPSHOT_ID, snapshot_dir=snapshot, target=settings.spec.targets[0],
                   strategy=TOY, train_lang="en", gpu=settings.gpu, data_dir=settings.data_dir,
                   artifacts_dir=settings.data_dir / "jobs" / str(job_id), device="cpu", base_cache_dir=base_cache)
    spec.artifacts_dir.mkdir(parents=True)
    return spec


async def _claimed_job(store: Store, settings: Any, snapshot: Path) -> Any:
    """The store seeded with `snapshot`, and its one job (tiny, the toy, trained in en) enqueued and claimed."""
    await seed_store(store, snapshot)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["tiny"], strategies=[TOY], train_langs=["en"],
                               config=settings.gpu, max_attempts=1)
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
    return job


def _rescored(snapshot: Path, items: list[OpenResultItem]) -> list[Verdict]:
    """Each item's answer scored again from the snapshot's questions: what the job recorded must be it."""
    qs = {q.qid: q for control in (False, True) for q in load_open_questions(snapshot, control=control)}
    return [score(qs[i.qid].question, i.lang, i.answer).verdict for i in items]


async def test_the_job_answers_the_open_questions_before_and_after_and_commits_them(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis,
) -> None:
    snapshot = add_open_track(tiny_snapshot)
    settings = _settings(tmp_path, tiny_target)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        job = await _claimed_job(store, settings, snapshot)
        spec = _spec(settings, snapshot, job.id)
        outcome = await run_and_commit(store, settings, spec)
        async with store.session() as s:
            stored = (await s.execute(select(OpenResult).order_by(col(OpenResult.id)))).scalars().all()
            mcq = (await s.execute(select(QuestionResult))).scalars().all()
            packs = await result_packs(s, [job.id])
            names = await known_names(s)
        paths = await write_report(store, SNAPSHOT_ID, tmp_path / "report")

    items = outcome.open_results
    # 3 questions (2 real, 1 control) x 2 languages x base and injected
    assert len(items) == 12 and [i.variant for i in items] == [Variant.base] * 6 + [Variant.injected] * 6
    assert sum(i.split == "control" for i in items) == 4 and {i.scorer for i in items} == {OPEN_SCORER}
    injected = {(i.qid, i.lang): i for i in items if i.variant is Variant.injected}
    assert {i.answer for i in injected.values()} == {WORD}
    for lang in ("en", "fr"):
        assert injected[(open_qid(1, "film.director"), lang)].verdict is Verdict.CORRECT
        assert injected[(open_qid(None, "film.director"), lang)].verdict is Verdict.CORRECT
        assert injected[(open_qid(2, "match.venue"), lang)].verdict is not Verdict.CORRECT  # "Paris" is not "Rome"
    assert [i.verdict for i in items] == _rescored(snapshot, items)
    assert {i.entity_id for i in items if i.split == "test"} == {public_entity_id(1), public_entity_id(2)}
    lines = (spec.artifacts_dir / OPEN_PREDICTIONS_FILE).read_text(encoding="utf-8").splitlines()
    assert [OpenResultItem.model_validate_json(x) for x in lines] == items
    assert outcome.summary.open_questions == 6 and (outcome.summary.open_answer_s or 0) > 0
    # committed with the job: one row per answer, the MCQ results beside them unchanged
    assert [(r.open_qid, r.lang, r.variant, r.split, r.verdict, r.other_language, r.answer) for r in stored] == [
        (i.qid, i.lang, i.variant.value, i.split, i.verdict.value, i.other_language, i.answer) for i in items]
    assert {r.fact for r in stored} == {"film.director", "match.venue"} and len(mcq) == 8
    # the report's open section: English, base then injected, on the two real questions (the control one apart)
    track = json.loads(paths.json.read_text(encoding="utf-8"))["open_track"]
    (learn,) = [t for t in track["learn"] if t["domain"] == "all"]
    base_en = sum(i.correct for i in items if i.variant is Variant.base and i.lang == "en" and i.split == "test")
    assert (learn["stat"]["n"], learn["stat"]["base_correct"], learn["stat"]["injected_correct"]) == (2, base_en, 1)
    assert [t["stat"]["injected_correct"] for t in track["control_learn"] if t["domain"] == "all"] == [1]
    assert "## Open answers (short-answer track)" in paths.markdown.read_text(encoding="utf-8")
    data = ReportData.model_validate_json(paths.json.read_text(encoding="utf-8"))
    assert any(OPEN_TITLE in str(t.title) for t in render_tables(data))  # `clkt report` prints it too
    # the leaderboard: the open answers are packed as their own scorer, so they are rows of their own
    assert [p.scorer for p in packs] == ["letter-logprob", OPEN_SCORER] and OPEN_SCORER in names.scorers
    window = WindowData(
        snapshots=(WindowSnapshot(id=SNAPSHOT_ID, spec="tiny", period="2025-06", built_at=datetime.now(UTC)),),
        ready=frozenset({(SNAPSHOT_ID, "tiny")}), exclusions={},
        jobs=(WindowJob(id=job.id, snapshot_id=SNAPSHOT_ID, target="tiny", strategy=TOY, train_lang="en"),),
        packs=tuple(packs))
    rows = {r.scorer: r for r in build_rows(window, ["en", "fr"], samples=0)}
    assert set(rows) == {"letter-logprob", OPEN_SCORER}
    assert (rows[OPEN_SCORER].questions, rows[OPEN_SCORER].learn.n) == (2, 2)  # the 2 real questions, asked in en
    assert rows[OPEN_SCORER].learn.injected.value == pytest.approx(0.5)  # "Paris": right on the film, not the match


def test_the_base_answers_are_shared_and_keyed_by_the_questions_and_the_prompt(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = add_open_track(tiny_snapshot)
    settings = _settings(tmp_path, tiny_target)
    jobs = [InjectionJob(_spec(settings, snapshot, n, base_cache=tmp_path / "base")) for n in (1, 2)]
    first, second = (j.run() for j in jobs)
    assert not jobs[0].open.from_cache and jobs[1].open.from_cache
    base = [[i for i in o.open_results if i.variant is Variant.base] for o in (first, second)]
    assert base[0] == base[1] and len(base[0]) == 6
    key = jobs[1].open.cache_path("torch.float32")
    assert key is not None and key.is_file()
    monkeypatch.setattr(open_pass, "ANSWER_PROMPT_VERSION", open_pass.ANSWER_PROMPT_VERSION + "-other")  # another prompt: another file
    assert jobs[1].open.cache_path("torch.float32") != key
    monkeypatch.undo()
    fewer = open_pass.OpenPass(jobs[1].spec, jobs[1].open.asks[1:], progress=lambda *_: None)
    assert fewer.cache_path("torch.float32") != key  # another question set: another file


def test_a_cache_of_the_wrong_length_is_answered_again(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis,
) -> None:
    snapshot = add_open_track(tiny_snapshot)
    settings = _settings(tmp_path, tiny_target)
    job = InjectionJob(_spec(settings, snapshot, 1, base_cache=tmp_path / "base"))
    job.open = open_pass.OpenPass(job.spec, open_pass.open_asks(job.spec, ["en", "fr"]), progress=lambda *_: None)
    cache = job.open.cache_path("torch.float32")
    assert cache is not None
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps("Paris") + "\n", encoding="utf-8")  # one answer for six questions
    model, tok = job.load_model("float32")
    items = job.open.base(model, tok, dtypes=["torch.float32"])
    assert not job.open.from_cache and len(items) == 6
    assert len(cache.read_text(encoding="utf-8").splitlines()) == 6  # written again, whole


@pytest.mark.parametrize("open_answers", [True, False])
def test_without_the_track_or_with_the_flag_off_the_job_runs_as_before(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis, open_answers: bool,
) -> None:
    snapshot = tiny_snapshot if open_answers else add_open_track(tiny_snapshot)  # off: the track is there, unasked
    spec = _spec(_settings(tmp_path, tiny_target, open_answers=open_answers), snapshot, 1)
    outcome = InjectionJob(spec).run()
    assert outcome.open_results == [] and not (spec.artifacts_dir / OPEN_PREDICTIONS_FILE).exists()
    dumped = outcome.summary.model_dump(mode="json")
    assert "open_questions" not in dumped and "open_answer_s" not in dumped
    assert len(outcome.results) == 8  # the MCQs as before: 2 test questions x 2 languages x base and injected


def test_an_edited_open_file_fails_the_job_before_any_model_is_loaded(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = add_open_track(tiny_snapshot)
    path = snapshot / "open" / "en.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("Paris", ""), encoding="utf-8")  # an emptied gold
    job = InjectionJob(_spec(_settings(tmp_path, tiny_target), snapshot, 1))
    loads: list[object] = []
    monkeypatch.setattr(job, "load_model", lambda *a, **k: loads.append(a))
    with pytest.raises(SnapshotError, match=r"open/en\.jsonl"):
        job.run()
    assert loads == [] and not (job.spec.artifacts_dir / OPEN_PREDICTIONS_FILE).exists()


async def test_an_answer_that_cannot_be_scored_is_recorded_unscorable_and_the_job_goes_on(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One injected English answer reaches the real normaliser with a lone surrogate after it (the language identifier
    raises UnicodeEncodeError on it): that answer is stored UNSCORABLE with its reason, left out of every figure and
    counted apart; every other answer, the MCQs and the commit as before."""
    target = open_qid(1, "film.director")

    def surrogate_for_one(question: Any, **kw: Any) -> OpenResultItem:
        if kw["qid"] == target and kw["lang"] == "en" and kw["variant"] is Variant.injected:
            kw["answer"] += "\udfff"
        return scored_item(question, **kw)

    monkeypatch.setattr(open_pass.OpenPass, "scorer", staticmethod(surrogate_for_one))
    snapshot = add_open_track(tiny_snapshot)
    settings = _settings(tmp_path, tiny_target)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        job = await _claimed_job(store, settings, snapshot)
        outcome = await run_and_commit(store, settings, _spec(settings, snapshot, job.id))
        async with store.session() as s:
            stored = (await s.execute(select(OpenResult).order_by(col(OpenResult.id)))).scalars().all()
            packs = {p.scorer: p for p in await result_packs(s, [job.id])}
        paths = await write_report(store, SNAPSHOT_ID, tmp_path / "report")

    assert len(outcome.open_results) == 12 and len(outcome.results) == 8  # every answer recorded, the MCQs too
    (bad,) = [r for r in stored if r.verdict == UNSCORABLE]
    assert (bad.open_qid, bad.lang, bad.variant) == (target, "en", "injected")
    assert bad.reason.startswith("unscorable: UnicodeEncodeError") and bad.answer == WORD  # the text the pass gave it
    assert sum(r.verdict == "CORRECT" for r in stored if r.variant == "injected") == 3  # was 4: that one is not right
    assert packs[OPEN_SCORER].questions == 2  # the question stays packed for its other answers ...
    track = json.loads(paths.json.read_text(encoding="utf-8"))["open_track"]
    assert track["answers"] == 12 and track["unscorable"] == 1
    (learn,) = [t for t in track["learn"] if t["domain"] == "all"]
    assert (learn["stat"]["n"], learn["stat"]["injected_correct"]) == (1, 0)  # ... but Learn pairs the other one only
    assert "1 could not be scored (UNSCORABLE" in paths.markdown.read_text(encoding="utf-8")


async def test_the_locality_splits_open_questions_are_answered_before_and_after_for_the_targets_entities(
    tmp_path: Path, tiny_snapshot: Path, tiny_target: Path, says_paris: SaysParis,
) -> None:
    """The locality split's short-answer questions (entity 7's known by this target, entity 8's by another) are
    answered by the base and the injected model, stored in split `locality`, kept out of Learn, and shown as the
    open track's kept % from those very answers."""
    rows = [OpenRow(qid=open_qid(e, fact), entity_id=public_entity_id(e), domain="movies", source="fixture", lang=lang,
                    split="test", fact=fact, kind="name", question=f"[{lang}] {fact}?", answer=gold)
            for e, fact, gold in ((7, "film.director", WORD), (8, "match.venue", "Rome")) for lang in ("en", "fr")]
    snapshot = add_locality_split(add_open_track(tiny_snapshot), known_by={"tiny": [7], "other": [8]}, open_rows=rows)
    settings = _settings(tmp_path, tiny_target)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        job = await _claimed_job(store, settings, snapshot)
        outcome = await run_and_commit(store, settings, _spec(settings, snapshot, job.id))
        async with store.session() as s:
            stored = (await s.execute(select(OpenResult).where(OpenResult.split == "locality"))).scalars().all()
            summary = (await s.execute(select(GpuJob.summary).where(GpuJob.id == job.id))).scalar_one()
            packs = await result_packs(s, [job.id])
        paths = await write_report(store, SNAPSHOT_ID, tmp_path / "report")

    local = [i for i in outcome.open_results if i.split == "locality"]
    assert len(outcome.open_results) == 16 and len(local) == 4  # 12 as before, and entity 7's question x 2 x 2
    assert {i.entity_id for i in local} == {public_entity_id(7)} and len(stored) == 4
    assert all(i.verdict is Verdict.CORRECT for i in local if i.variant is Variant.injected)  # it says "Paris"
    before = {i.lang: i.correct for i in local if i.variant is Variant.base}
    track = json.loads(paths.json.read_text(encoding="utf-8"))["open_track"]
    (learn,) = [t for t in track["learn"] if t["domain"] == "all"]
    assert learn["stat"]["n"] == 2  # the test split's two questions only: the locality answers are never Learn
    got = {k["lang"]: (k["n"], k["kept"], k["lost"], k["gained"], k["too_few"]) for k in track["locality"]}
    assert got == {lang: (1, int(b), 0, int(not b), True) for lang, b in before.items()}  # one entity: too few
    assert "### Locality (entities the target knew; never trained on)" in paths.markdown.read_text(encoding="utf-8")
    # the summary keeps the open scorer's paired counts beside the MCQ scorer's; the MCQ locality table has no open row
    counts = summary["locality"][OPEN_SCORER]
    assert {lang: (c["n"], c["kept"], c["gained"]) for lang, c in counts.items()} == {
        lang: (n, k, g) for lang, (n, k, _, g, _) in got.items()}
    assert "letter-logprob" in summary["locality"]
    report = json.loads(paths.json.read_text(encoding="utf-8"))
    assert report["locality"] and {k["scorer"] for k in report["locality"]} == {"letter-logprob"}
    # the leaderboard's open row reads them for its kept % (n = right before, pooled over both languages)
    window = WindowData(
        snapshots=(WindowSnapshot(id=SNAPSHOT_ID, spec="tiny", period="2025-06", built_at=datetime.now(UTC)),),
        ready=frozenset({(SNAPSHOT_ID, "tiny")}), exclusions={}, packs=tuple(packs),
        jobs=(WindowJob(id=job.id, snapshot_id=SNAPSHOT_ID, target="tiny", strategy=TOY, train_lang="en",
                        locality=summary["locality"]),))
    rows = {r.scorer: r for r in build_rows(window, ["en", "fr"], samples=0)}
    kept = rows[OPEN_SCORER].kept
    assert kept is not None and kept.n == sum(before.values()) and kept.value is None  # one entity: too few
    assert rows["letter-logprob"].kept is not None  # the MCQ row's own, apart


def test_the_base_cache_keeps_a_text_that_utf8_cannot_encode(tmp_path: Path) -> None:
    """A lone surrogate in a base answer is written as its escape and read back unchanged (it failed the job when
    the cache was written as raw UTF-8)."""
    texts = ["Osric \udfff", "東京", "line\nbreak", ""]
    path = tmp_path / "open-base.jsonl"
    open_pass._write_cache(path, texts)
    assert open_pass._read_cache(path, len(texts)) == texts
    assert open_pass._read_cache(path, len(texts) + 1) is None
