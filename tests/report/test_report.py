from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clkt.evaluate.summary import ControlCounts
from clkt.report.data import JobInfo
from clkt.report.metrics import Outcome
from clkt.report.writer import build_report, render_tables, write_report_files


def _outcomes(model: str, strategy: str) -> list[Outcome]:
    out: list[Outcome] = []
    for train in ("en", "ja"):
        for lang in ("en", "ja", "fr"):
            for q in range(1, 9):
                right = (q % 2 == 0) if lang == train else (q % 4 == 0)
                if train == "ja" and lang == "ja":
                    right = False  # A + B = 0 for ja->* : Transfer undefined
                out.append(Outcome(model=model, strategy=strategy, scorer="generate", variant="injected", train_lang=train,
                                   lang=lang, qid=q, domain="movies" if q <= 4 else "music", correct=right,
                                   predicted=None if q == 1 else "A"))
                out.append(Outcome(model=model, strategy=strategy, scorer="generate", variant="base", train_lang=train,
                                   lang=lang, qid=q, domain="movies" if q <= 4 else "music", correct=q == 3, predicted="A"))
    return out


def test_report_files_both_scenarios_and_figures(tmp_path: Path) -> None:
    outcomes = _outcomes("small", "cpt-lora") + _outcomes("large", "cpt-lora") + _outcomes("small", "sft-lora")
    jobs = [
        JobInfo(job_id=i, model=m, strategy=s, train_lang=t, status="done", family="fam", size_b=size)
        for i, (m, s, t, size) in enumerate(
            [("small", "cpt-lora", "en", 0.3), ("small", "cpt-lora", "ja", 0.3), ("large", "cpt-lora", "en", 1.5),
             ("large", "cpt-lora", "ja", 1.5), ("small", "sft-lora", "en", 0.3), ("small", "sft-lora", "ja", 0.3)]
        )
    ]
    data = build_report("snap-1", ["en", "ja", "fr", "zh"], jobs, outcomes)
    paths = write_report_files(data, tmp_path / "r")
    md = paths.markdown.read_text()
    assert "Model comparison — cpt-lora, generate" in md and "Strategy comparison — small, generate" in md
    assert "undefined" in md  # ja-trained jobs have A + B = 0
    assert "missing pairs" in md and "en->zh" in md  # no zh answers: missing, not zero
    rows = list(csv.DictReader(paths.pairs_csv.open()))
    ja_en = [r for r in rows if r["train_lang"] == "ja" and r["test_lang"] == "en" and r["domain"] == "all"]
    assert ja_en and all(r["transfer"] == "undefined" for r in ja_en)
    import matplotlib.image as mpimg

    heat = [f for f in paths.figures if f.name.startswith("heatmap-")]
    size = [f for f in paths.figures if f.name.startswith("size-")]
    assert len(heat) == 3 and len(size) == 1  # one per model x strategy; one family with two sizes
    for f in paths.figures:
        assert mpimg.imread(f).ndim == 3 and f.name in md
    assert len(render_tables(data)) >= 3


def _learning(model: str, *, n: int, learn: bool) -> list[Outcome]:
    """Train en; test en and fr. Base: always wrong. Injected en: right on 3/4 of the questions when it learns,
    else on 2 of them; fr: right on the en-right questions with q = 2 mod 4 (a third of them)."""
    out: list[Outcome] = []
    for q in range(n):
        en_right = (q % 4 != 0) if learn else (q < 2)
        for lang, right in (("en", en_right), ("fr", en_right and q % 2 == 0)):
            out.append(Outcome(model=model, strategy="cpt-lora", scorer="option-loglik", variant="injected", train_lang="en",
                               lang=lang, qid=q, domain="music", correct=right))
            out.append(Outcome(model=model, strategy="cpt-lora", scorer="option-loglik", variant="base", train_lang="en",
                               lang=lang, qid=q, domain="music", correct=False))
    return out


def test_report_says_what_was_learned_what_transferred_and_what_is_too_small(tmp_path: Path) -> None:
    outcomes = _learning("learner", n=40, learn=True) + _learning("stuck", n=40, learn=False)
    control = {"option-loglik": {"en": ControlCounts(n=20, base_correct=5, injected_correct=17, gained=12, lost=0),
                                 "fr": ControlCounts(n=20, base_correct=5, injected_correct=6, gained=2, lost=1)}}
    jobs = [JobInfo(job_id=1, model="learner", strategy="cpt-lora", train_lang="en", status="done", control=control),
            JobInfo(job_id=2, model="stuck", strategy="cpt-lora", train_lang="en", status="done",
                    control={"option-loglik": {"en": ControlCounts(n=3, base_correct=9, injected_correct=0, gained=0, lost=0)}})]
    # ^ inconsistent counts (9 right of 3): noted, not fatal
    data = build_report("snap-2", ["en", "fr"], jobs, outcomes)
    learn = {t.model: t for t in data.learn if t.domain == "all"}
    assert learn["learner"].learned and learn["learner"].stat.p_value < 1e-6
    assert not learn["stuck"].learned  # 2 of 40 gained: not significant
    # the stuck job's Transfer is left out of its mean: "not interpretable", never a number
    cells = {c.model: c for c in data.table2 if c.domain == "all"}
    assert cells["stuck"].transfer_mean is None and cells["stuck"].not_interpretable == 1
    avg = next(c for c in data.table2 if c.model == "stuck" and c.domain == "avg")
    assert avg.transfer_mean is None and avg.not_interpretable == 1
    assert cells["learner"].transfer_mean == pytest.approx(10 / 30) and cells["learner"].transfer_ci is not None
    assert all(c.overall_ci is not None for c in data.table2 if c.overall_mean is not None)  # a CI beside every mean
    ctrl = {c.lang: c for c in data.control}
    assert ctrl["en"].stat.learned and not ctrl["fr"].stat.learned
    assert [t.train_lang for t in data.control_learn] == ["en"]
    assert any("job 2: its control counts" in n for n in data.notes)
    paths = write_report_files(data, tmp_path / "r")
    md = paths.markdown.read_text()
    short = md.split("## In short")[1].split("##")[0]
    assert "learner / cpt-lora / option-loglik trained in en learned" in short
    assert "stuck / cpt-lora / option-loglik trained in en did NOT learn" in short
    assert "Transfer, stuck / cpt-lora / option-loglik: not interpretable (no job of it learned)" in short
    assert "Too small to say: 1 of 2 Transfer cells rest on fewer than 10 questions" in short  # stuck: A+B = 2
    assert "## Control split" in md and "not interpretable" in md
    pairs = {r["test_lang"] + r["model"]: r for r in csv.DictReader(paths.pairs_csv.open()) if r["domain"] == "all"}
    assert pairs["frlearner"]["transfer_reading"] == "ok" and pairs["frlearner"]["a_plus_b"] == "30"
    assert pairs["frstuck"]["transfer_reading"] == "not interpretable" and pairs["frstuck"]["job_learned"] == "False"
    learn_rows = list(csv.DictReader((tmp_path / "r" / "learn.csv").open()))
    assert {(r["split"], r["model"]) for r in learn_rows if r["domain"] == "all"} == {("real", "learner"), ("real", "stuck"), ("control", "learner")}


def test_a_small_cell_is_too_few_not_a_percentage(tmp_path: Path) -> None:
    # 6 questions, all learned (p = 0.03): a Transfer cell on A+B = 6 is "too few", not 50 %
    data = build_report("snap-3", ["en", "fr"], [JobInfo(job_id=1, model="m", strategy="cpt-lora", train_lang="en", status="done")],
                        _learning("m", n=8, learn=True))
    assert data.learn[-1].learned
    paths = write_report_files(data, tmp_path / "r")
    row = next(r for r in csv.DictReader(paths.pairs_csv.open()) if r["domain"] == "all")
    assert row["transfer_reading"] == "too few" and row["a_plus_b"] == "6"


def test_report_header_says_when_the_train_languages_are_a_subset(tmp_path: Path) -> None:
    outcomes = _learning("learner", n=12, learn=True)
    jobs = [JobInfo(job_id=1, model="learner", strategy="cpt-lora", train_lang="en", status="done", best_epoch=3)]
    subset = write_report_files(build_report("snap-3", ["en", "fr"], jobs, outcomes), tmp_path / "a").markdown.read_text()
    head = subset.splitlines()[2]
    assert "Train languages: en — a subset: only these were injected; every job is tested in all 2 languages." in head
    assert "Best epoch (chosen on the train language's validation questions): learner / cpt-lora / en: 3." in head
    both = [*jobs, JobInfo(job_id=2, model="learner", strategy="cpt-lora", train_lang="fr", status="failed")]
    full = write_report_files(build_report("snap-3", ["en", "fr"], both, outcomes), tmp_path / "b").markdown.read_text()
    assert "Train languages" not in full.splitlines()[2] and "Jobs: 1 done of 2." in full.splitlines()[2]
    # a job whose open track chose its own epoch says so beside the MCQ one
    apart = [jobs[0].model_copy(update={"open_epoch": 5})]
    head = write_report_files(build_report("snap-3", ["en", "fr"], apart, outcomes), tmp_path / "c").markdown.read_text()
    assert ("learner / cpt-lora / en: 3 (open answers: 5, chosen on the open validation questions)."
            in head.splitlines()[2])


async def test_a_job_whose_stored_summary_is_unreadable_is_reported_without_it(tmp_path: Path) -> None:
    from clkt.report.writer import load_report_data
    from storage.engine import Store
    from tests.report._store import SNAPSHOT_ID, seed_report_store

    broken = {"selection_scorer": "generate", "scores": "not a list"}
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_report_store(store, summaries={("small", "en"): broken})
        data = await load_report_data(store, SNAPSHOT_ID)
    (note,) = [n for n in data.notes if "stored summary is unreadable" in n]
    assert note.startswith("job 1: ") and "reported without it" in note
    job = next(j for j in data.jobs if j.job_id == 1)
    assert (job.family, job.size_b, job.parse, job.control) == (None, None, None, None)
    assert next(j for j in data.jobs if j.job_id == 2).family == "fam"  # the others keep theirs
