"""One base answer set per (target, snapshot, scorer): a store whose jobs hold two (full-ft's fp32 base pass beside
the others' bf16 one, written before the base pass ran in one dtype; or jobs on other kinds of device) is read as
one set by every view. The report (which reads the lowest training seed's jobs) and the in-context floor (which
reads every done job) were each taking whichever job they met first, and so read different base answers."""

from __future__ import annotations

from pathlib import Path

from clkt.config import AgentSettings, GpuSettings, SpecSettings, TargetSettings
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM
from clkt.incontext.runner import run_incontext
from clkt.report.writer import load_report_data
from clkt.targets.loader import clear_cache
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import results_for_snapshot
from storage.incontext import incontext_answers
from storage.models import GpuJob, QuestionResult
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.incontext._helpers import no_secrets
from tests.inject._fixtures import QUESTIONS, SNAPSHOT_ID, public_qid, seed_store, write_tiny_snapshot


async def _job(store: Store, *, strategy: str, seed: int, letters: dict[tuple[int, str], str]) -> int:
    """A done job of target "tiny" whose stored base answers (option-loglik-norm) are `letters`."""
    answers = {(qid, lang): ans for lang, rows in QUESTIONS.items() for qid, _, _, _, _, ans in rows}
    async with store.transaction() as s:
        job = GpuJob(snapshot_id=SNAPSHOT_ID, target_model="tiny", strategy=strategy, train_lang="en", seed=seed,
                     status=LeaseStatus.done)
        s.add(job)
        await s.flush()
        for (qid, lang), letter in letters.items():
            s.add(QuestionResult(job_id=job.id, question_id=qid, lang=lang, variant="base", scorer=OPTION_LOGLIK_NORM,
                                 split="test", predicted=letter, correct=letter == "ABCD"[answers[(qid, lang)]]))
        return int(job.id or 0)


async def test_the_report_and_the_incontext_floor_read_one_base_set(store: Store, tmp_path: Path) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    right = {(qid, lang): "ABCD"[ans] for lang, rows in QUESTIONS.items() for qid, _, split, _, _, ans in rows
             if split == "test"}
    wrong = {k: ("B" if v == "A" else "A") for k, v in right.items()}
    # the first job (seed 1, its base pass run in another dtype or on another kind of device) answered every test
    # question wrong; the second (seed 0, the report's primary seed) right: two base sets of one (target, scorer)
    first = await _job(store, strategy="cpt-lora", seed=1, letters=wrong)
    second = await _job(store, strategy="cpt-lora", seed=0, letters=right)
    assert first < second

    async with store.session() as s:
        rows = await results_for_snapshot(s, SNAPSHOT_ID)
    by_job = {j: {(r.question_id, r.lang): r.predicted for r in rows if r.job_id == j} for j in (first, second)}
    assert by_job[first] == by_job[second] == wrong  # one set, whichever job a view reads: the first job's

    report = await load_report_data(store, SNAPSHOT_ID)
    assert {j.job_id for j in report.jobs} == {second}  # the report reads the seed-0 job only...
    base = {b.lang: b for b in report.base if b.scorer == OPTION_LOGLIK_NORM}
    assert {lang: (b.n, b.accuracy) for lang, b in base.items()} == {"en": (2, 0.0), "fr": (2, 0.0)}  # ...its answers: the set

    folder = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    target = TargetSettings.model_validate({"name": "tiny", "model": str(folder), "kind": "base"})
    clear_cache()
    try:
        [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, agents=AgentSettings(), data_dir=tmp_path,
                                    spec=SpecSettings(targets=[target], languages=["en", "fr"], train_languages=["en"]),
                                    gpu=GpuSettings(devices=["cpu"], max_new_tokens=4, eval_batch_size=4),
                                    secret=no_secrets)
    finally:
        clear_cache()
    assert run.error is None and run.counts.from_jobs == len(right)
    async with store.session() as s:
        floor = {(r.qid, r.lang): r.letter for r in await incontext_answers(s, SNAPSHOT_ID, target="tiny")
                 if not r.context_lang}
    public = {public_qid(qid, e): qid for lang in QUESTIONS for qid, e, *_ in QUESTIONS[lang]}
    assert {(public[q], lang): letter for (q, lang), letter in floor.items()} == wrong  # the floor: the same set
