"""A local target's in-context track is scored like its parametric jobs are headlined: a base model by
option-loglik-norm (every answer has a letter; a base model does not answer with one), an instruct model by the
generate scorer and its letter parse (a tiny random model saved to a folder, loaded by the runner: fast)."""

from __future__ import annotations

from pathlib import Path

from clkt.config import AgentSettings, GpuSettings, SpecSettings, TargetSettings
from clkt.evaluate.loglik import loglik_item, score_option_loglik
from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.runner import answer_questions
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM, score_generate
from clkt.incontext import incontext_scorer
from clkt.incontext.prompt import document_block
from clkt.incontext.runner import run_incontext
from clkt.report.markdown import markdown
from clkt.report.writer import load_report_data
from clkt.snapshots.layout import QuestionRow, load_snapshot_dir
from clkt.targets.loader import clear_cache
from clkt.targets.prompting import render_prompt
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.incontext import InContextRecord, incontext_answers
from storage.models import GpuJob, QuestionResult
from tests.evaluate._tiny import tiny_model, tiny_tokenizer
from tests.incontext._helpers import no_secrets
from tests.inject._fixtures import QUESTIONS, SNAPSHOT_ID, public_qid, seed_store, write_tiny_snapshot


def _local(tmp_path: Path, kind: str) -> TargetSettings:
    folder = tmp_path / "tiny-model"
    if not folder.exists():
        tiny_model("llama", seed=3).save_pretrained(folder)
        tiny_tokenizer().save_pretrained(folder)
    return TargetSettings.model_validate({"name": "tiny", "model": str(folder), "kind": kind})


async def _run(store: Store, tmp_path: Path, target: TargetSettings) -> list[InContextRecord]:
    snap_dir = write_tiny_snapshot(tmp_path / "snap")
    await seed_store(store, snap_dir)
    spec = SpecSettings(targets=[target], languages=["en", "fr"], train_languages=["en"])
    gpu = GpuSettings(devices=["cpu"], max_new_tokens=4, eval_batch_size=4)
    clear_cache()
    try:
        [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=AgentSettings(),
                                    gpu=gpu, data_dir=tmp_path, secret=no_secrets)
    finally:
        clear_cache()
    assert run.error is None and run.counts.asked == 8  # 2 test questions x 2 languages x (floor, en document)
    async with store.session() as s:
        return await incontext_answers(s, SNAPSHOT_ID, target="tiny")


def test_the_scorer_follows_the_parametric_headline() -> None:
    gpu = GpuSettings()
    assert incontext_scorer(TargetSettings(name="b", model="m", kind="base"), gpu) == OPTION_LOGLIK_NORM
    assert incontext_scorer(TargetSettings(name="i", model="m", kind="instruct"), gpu) == "generate"
    # a base target whose parametric jobs generate (its own `scorers`) generates here too
    assert incontext_scorer(TargetSettings(name="g", model="m", kind="base", scorers=["generate"]), gpu) == "generate"


async def test_a_local_base_target_is_scored_by_option_loglik_norm(store: Store, tmp_path: Path) -> None:
    target = _local(tmp_path, "base")
    rows = await _run(store, tmp_path, target)
    assert {r.scorer for r in rows} == {OPTION_LOGLIK_NORM}
    assert {r.status for r in rows} == {"answered"} and all(r.letter in "ABCD" for r in rows)  # never unparsed
    # the letters are the parametric scorer's acc_norm with the document block before the question
    snap = load_snapshot_dir(tmp_path / "snap", verify_hashes=False)
    docs = {(d.entity_id, d.lang): d.text for lang in snap.languages for d in snap.docs_for(lang)}
    qs = {(q.qid, q.lang): q for lang in snap.languages for q in snap.questions_for(lang, "test")}
    model, tok = tiny_model("llama", seed=3), tiny_tokenizer()
    items = []
    for r in rows:
        q = qs[(r.qid, r.lang)]
        doc = docs[(r.entity_id, r.context_lang)].strip() if r.context_lang else None
        items.append(loglik_item(target, tok, q.question, q.options, q.lang, prefix=document_block(doc)))
    direct = score_option_loglik(model, tok, items, batch_size=3)
    assert [r.letter for r in rows] == [d.acc_norm for d in direct]
    md = markdown(await load_report_data(store, SNAPSHOT_ID), [])
    assert f"| tiny | {OPTION_LOGLIK_NORM} | en |" in md  # the section names the scorer and the documents


async def test_a_local_instruct_target_still_generates(store: Store, tmp_path: Path) -> None:
    target = _local(tmp_path, "instruct")
    rows = await _run(store, tmp_path, target)
    assert {r.scorer for r in rows} == {"generate"}
    model, tok = tiny_model("llama", seed=3), tiny_tokenizer()
    snap = load_snapshot_dir(tmp_path / "snap", verify_hashes=False)
    qs = {(q.qid, q.lang): q for lang in snap.languages for q in snap.questions_for(lang, "test")}
    floor = [r for r in rows if not r.context_lang]
    from clkt.evaluate.prompts import mcq_text

    prompts = [render_prompt(target, tok, mcq_text(qs[(r.qid, r.lang)].question, list(qs[(r.qid, r.lang)].options),
                                                   r.lang, cue=True)) for r in floor]  # no chat template: the cue
    direct = score_generate(model, tok, prompts, max_new_tokens=4)
    assert [r.letter for r in floor] == [d.predicted for d in direct]
    assert sum(r.status == "unparsed" for r in rows) == sum(r.letter is None for r in rows)


async def test_the_demo_runs_the_track_in_en_and_rewrites_its_report(store: Store, tmp_path: Path) -> None:
    from clkt.config import Settings
    from clkt.incontext.demo_track import run_demo_track

    target = _local(tmp_path, "base")
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    settings = Settings(data_dir=tmp_path / "data", spec={"targets": [target.model_dump()], "languages": ["en", "fr"]},
                        gpu={"devices": ["cpu"], "eval_batch_size": 4})
    assert settings.spec.train_langs == ["en", "fr"]
    clear_cache()
    try:
        done = await run_demo_track(
            store, spec=settings.spec, agents=settings.agents, gpu=settings.gpu, data_dir=Path(settings.data_dir),
            secret=settings.secret, snapshot_id=SNAPSHOT_ID, report=tmp_path / "report",
        )
    finally:
        clear_cache()
    assert done.contexts == ["en"] and [r.counts.asked for r in done.runs] == [8] and done.wall_s > 0
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"| tiny | {OPTION_LOGLIK_NORM} | en |" in md
    assert "the offline demo runs it with en documents only, not fr" in md  # said in the report
    assert "| en | fr | 2 |" in md and "| none (floor) | en | 2 |" in md  # accuracy per test language, n


async def _store_base_pass(store: Store, target: TargetSettings, rows: list[QuestionRow], *, name: str,
                           flip: int | None = None) -> list[ResultItem]:
    """A done job of target `name` on the tiny snapshot whose base answers are the GPU side's own base pass on the
    tiny model (`answer_questions`, option-loglik), stored as a job commits them; `flip`: the row whose stored
    letter is changed (so that a floor taken from the store tells itself apart from one computed again)."""
    model, tok = tiny_model("llama", seed=3), tiny_tokenizer()
    items = answer_questions(model, tok, target, rows, scorers=["option-loglik"], gpu=GpuSettings(devices=["cpu"]),
                             variant=Variant.base)
    row_of = {public_qid(row, e): row for lang in QUESTIONS for row, e, *_ in QUESTIONS[lang]}
    async with store.transaction() as s:
        job = GpuJob(snapshot_id=SNAPSHOT_ID, target_model=name, strategy="cpt-lora", train_lang="en",
                     status=LeaseStatus.done)
        s.add(job)
        await s.flush()
        for i, it in enumerate(items):
            letter = it.predicted
            if i == flip and letter is not None:
                letter = "ABCD"[("ABCD".index(letter) + 1) % 4]
            s.add(QuestionResult(job_id=job.id, question_id=row_of[it.qid], lang=it.lang, variant="base", scorer=it.scorer,
                                 split=it.split, predicted=letter, correct=letter == it.predicted, raw=it.raw))
    return items


async def test_a_base_targets_floor_is_its_jobs_base_pass_not_asked_again(store: Store, tmp_path: Path) -> None:
    target = _local(tmp_path, "base")
    snap_dir = write_tiny_snapshot(tmp_path / "snap")
    await seed_store(store, snap_dir)
    snap = load_snapshot_dir(snap_dir, verify_hashes=False)
    rows = [q for lang in snap.languages for q in snap.questions_for(lang, "test")]
    # the base pass's prompts are the floor's: its acc_norm letters are what the track computes without a document
    items = await _store_base_pass(store, target, rows, name="other")  # another target's job: not its floor
    norm = [it for it in items if it.scorer == OPTION_LOGLIK_NORM]
    model, tok = tiny_model("llama", seed=3), tiny_tokenizer()
    direct = score_option_loglik(model, tok, [loglik_item(target, tok, q.question, q.options, q.lang, prefix="")
                                              for q in rows], batch_size=3)
    assert [it.predicted for it in norm] == [d.acc_norm for d in direct]
    flipped = next(i for i, it in enumerate(items) if it.scorer == OPTION_LOGLIK_NORM)
    await _store_base_pass(store, target, rows, name="tiny", flip=flipped)
    spec = SpecSettings(targets=[target], languages=["en", "fr"], train_languages=["en"])
    clear_cache()
    try:
        [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=AgentSettings(),
                                    gpu=GpuSettings(devices=["cpu"], max_new_tokens=4, eval_batch_size=4),
                                    data_dir=tmp_path, secret=no_secrets)
    finally:
        clear_cache()
    assert run.error is None and run.counts.from_jobs == 4 and run.counts.asked == 4  # only the en documents asked
    async with store.session() as s:
        stored = await incontext_answers(s, SNAPSHOT_ID, target="tiny")
    floor = {(r.qid, r.lang): r.letter for r in stored if not r.context_lang}
    job_letters = {(it.qid, it.lang): it.predicted for it in norm}
    f = items[flipped]
    job_letters[(f.qid, f.lang)] = "ABCD"[("ABCD".index(f.predicted or "A") + 1) % 4]  # as stored for "tiny"
    assert floor == job_letters and {r.scorer for r in stored} == {OPTION_LOGLIK_NORM}
