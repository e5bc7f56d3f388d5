"""The report of a snapshot: the paper's Table 2 (both scenarios), heatmaps, size curves, CSV/JSON/Markdown.

`write_report(store, snapshot_id, out_dir)` reads the finished jobs' results, computes `clkt.report.metrics`
and writes into `out_dir` (by default `<data_dir>/reports/<snapshot_id>/`):

- `table2.csv` (model x strategy x scorer x domain, mean ± std over pairs, bootstrap CIs), `pairs.csv`
  (A/B/C/D per ordered pair, whether its job learned, whether A+B is too small), `learn.csv` (Learn per
  job: base against injected in the train language, exact McNemar p), `metrics.json` (everything, plus base
  accuracy and the asymmetry tests);
- `heatmap-<model>-<strategy>-<scorer>.png` (`clkt.report.figures`): Transfer, L_train x L_test (the paper's Figure 3); every cell
  shows its n (A+B); cells under `MIN_CELL_N` questions and the rows of jobs that did not learn are grey;
- `size-<family>-<strategy>-<scorer>.png`: Overall/Transfer against model size per domain when the spec has
  several sizes of a family (Figure 4);
- `locality.csv` (only when a job answered a locality split): kept % per job x scorer x test language, with its
  n, paired counts and bootstrap CI over entities (`clkt.report.locality`);
- `report.md`, embedding them, opening with what was learned, what transferred and what is too small to
  say. `render_tables()` gives the rich tables `clkt report` prints.

Control questions (the snapshot's fictional entities) never enter the real scores (they are not store rows):
each job keeps their paired counts per scorer and language in its summary's `control`
(`clkt.evaluate.summary.JobSummary`, read in either stored shape), and the report shows them apart, base
against injected per language, as the positive control of injection. A job whose stored summary cannot be
read is reported without it (no family, size, parse rule or control counts), with a note saying so.

The open track's answers (`storage.open_results`), where jobs answered the snapshot's short-answer questions, get
their own section and `metrics.json` key (`open_track`: `clkt.report.open_track`), computed by the same metric
functions and never pooled with the MCQ rows; the jury's verdicts, where a jury graded them
(`storage.open_judgements`), are its figure apart (`open_track.jury`: `clkt.report.open_jury`).
The report is written by the `report-writer` service (`clkt.report.service`) once every GPU job of the
snapshot has finished, and by `clkt report`.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from clkt.errors import UserError
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.clustered import entity_draws
from clkt.report.cutoff_curve import TargetWindow, knowledge_curves, knowledge_windows
from clkt.report.data import (
    LEARN_HEADER,
    MIN_CELL_N,
    ControlLang,
    JobInfo,
    ReportData,
    TargetValidity,
    base_cell,
    grid,
    in_short,
    learn_rows,
    pair_reading,
    pct,
    scenarios,
)
from clkt.report.figures import heatmaps, size_plots
from clkt.report.incontext import incontext_results
from clkt.report.incontext_open import incontext_open_results
from clkt.report.job_info import job_infos
from clkt.report.learn import LearnTest, learn_tests, stat_from_counts
from clkt.report.locality import KEPT_HEADER, kept_langs, kept_row, locality_entities
from clkt.report.markdown import markdown
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import (
    ALL_DOMAINS,
    BASE_FLAG_MEANS,
    BASE_FLAG_P,
    BaseAccuracy,
    Outcome,
    base_accuracy,
    mcnemar_tests,
    pair_metrics,
    parse_failure_rates,
)
from clkt.report.open_board import is_open, mcq_locality
from clkt.report.open_track import OPEN_TITLE, open_track
from clkt.report.seed_report import SeedTables, primary_seed, seed_tables, table2
from clkt.report.window import public_entity_ids
from clkt.snapshots.ids import stable_entity_id, stable_qid
from storage.gpu_jobs import JobResultRow, jobs_for_snapshot, results_for_snapshot
from storage.incontext import InContextRecord, incontext_answers
from storage.incontext_open import InContextOpenRecord, incontext_open_answers
from storage.incontext_open_judgements import InContextJuryRow, incontext_jury_rows
from storage.knowledge import known_by_month
from storage.open_judgements import jury_rows_for_snapshot
from storage.open_results import open_results_for_snapshot
from storage.snapshots import find_snapshot
from storage.targets import list_targets, snapshot_targets

if TYPE_CHECKING:
    from rich.table import Table

    from clkt.config import SpecSettings
    from storage.engine import Store

__all__ = [  # the report's data model lives in clkt.report.data; re-exported for its readers
    "MIN_CELL_N",
    "ControlLang",
    "JobInfo",
    "ReportData",
    "ReportPaths",
    "build_report",
    "load_report_data",
    "render_tables",
    "report_dir",
    "write_report",
    "write_report_files",
]


def report_dir(data_dir: Path, snapshot_id: str) -> Path:
    return data_dir / "reports" / snapshot_id


@dataclass(frozen=True, slots=True)
class ReportPaths:
    directory: Path
    markdown: Path
    json: Path
    table_csv: Path
    pairs_csv: Path
    figures: list[Path] = field(default_factory=list)
    learn_csv: Path | None = None


async def load_report_data(
    store: Store, snapshot_id: str, *, seed: int = 0, exclude_qids: frozenset[int] = frozenset(),
    spec: SpecSettings | None = None,
) -> ReportData:
    """The report's data from the stored results; `exclude_qids`: public qids left out of every figure (the
    snapshot's retracted questions, when a publish revision recomputes its report: `clkt.publish`); `spec`: the
    declared cutoffs and the buffer of its targets (the knowledge section's windows and alarm); without it, the
    store's registry gives the cutoffs and no window is known."""
    async with store.session() as s:
        snap = await find_snapshot(s, snapshot_id)
        if snap is None:
            raise UserError(f"no snapshot {snapshot_id!r} in the store")
        all_jobs = await jobs_for_snapshot(s, snapshot_id)
        all_rows = await results_for_snapshot(s, snapshot_id)
        jobs, rows, seed_note = primary_seed(all_jobs, all_rows)
        manifest = dict(snap.manifest or {})
        validity = await snapshot_targets(s, snapshot_id=snapshot_id)
        verdicts = await known_by_month(s, targets=sorted({j.target_model for j in jobs})) if jobs else []
        registry = {t.name: t.cutoff for t in await list_targets(s)}
        incontext_rows = await incontext_answers(s, snapshot_id)
        incontext_open_rows = await incontext_open_answers(s, snapshot_id)
        incontext_jury = await incontext_jury_rows(s, snapshot_id) if incontext_open_rows else []
        open_rows = await open_results_for_snapshot(s, snapshot_id)
        jury_rows = await jury_rows_for_snapshot(s, snapshot_id) if open_rows else []
    infos, unreadable = job_infos(jobs)
    langs = list(manifest.get("languages") or sorted({r.lang for r in rows} | {j.train_lang for j in jobs}))
    outcomes = _outcomes(rows, exclude_qids)
    # the other seeds' answers: every figure of a group run with several seeds pools them (`clkt.report.seed_report`)
    primary = {j.id for j in jobs}
    others = _outcomes([r for r in all_rows if r.job_id not in primary], exclude_qids) if seed_note else []
    seeded = await seed_tables(store, snap, all_jobs, langs, seed=seed, drop=frozenset(
        r.question_id for r in all_rows if stable_qid(r.source, r.external_id, r.slot) in exclude_qids)) if seed_note else None
    left_out = ({stable_qid(r.source, r.external_id, r.slot) for r in rows} | {r.open_qid for r in open_rows}) & exclude_qids
    public = Outcome.public_ids(outcomes)
    near = locality_entities(mcq_locality(j.locality) for j in infos)  # the open layers' ids are public already
    if near - set(public):  # the locality split's entities: their public ids order their draws too
        async with store.session() as s:
            public |= await public_entity_ids(s, near - set(public))
    data = await asyncio.to_thread(partial(build_report, public=public, other_seeds=others, seeded=seeded), snapshot_id,
                                   langs, infos, outcomes, seed)
    data.notes.extend(unreadable)
    if seed_note:  # several seeds: every figure pools them, *Training seeds* their spread (the open rows: its section)
        data.notes.append(seed_note)
        data = data.model_copy(update={"seeds": [r for r in seeded.rows if not is_open(r.scorer)] if seeded else []})  # MCQ
    if left_out:
        data.notes.append(f"{len(left_out)} retracted question(s) are left out of every figure (see ERRATA.md)")
    if verdicts:
        windows = knowledge_windows(spec, registry) if spec is not None else {
            name: TargetWindow(declared_cutoff=cutoff, window_start=None) for name, cutoff in registry.items()
        }
        data.knowledge.extend(knowledge_curves(verdicts, windows))
        data.notes.extend(f"contamination alarm: {k.summary}" for k in data.knowledge if k.alarm)
    data = await _with_incontext(data, incontext_rows, incontext_open_rows, exclude_qids=exclude_qids, langs=langs,
                                 snapshot_id=snapshot_id, seed=seed, jury=incontext_jury)
    if open_kept := [r for r in open_rows if r.open_qid not in exclude_qids]:  # the open track, apart (`clkt.report.open_track`)
        mcq = [r for r in rows if stable_qid(r.source, r.external_id, r.slot) not in exclude_qids]
        data = data.model_copy(update={"open_track": await asyncio.to_thread(partial(
            open_track, open_kept, languages=langs, snapshot_id=snapshot_id, seed=seed, primary_jobs=primary, mcq=mcq,
            seeded=seeded.of(is_open) if seeded is not None else None,
            jury=[j for j in jury_rows if j.open_qid not in exclude_qids]))})
    ran = {j.target_model for j in jobs}  # every target whose jobs ran on it, each on its valid entities
    return data.model_copy(update={"targets": [
        TargetValidity(target=v.target_name, status=v.status.value, entities=v.entities, excluded=v.excluded)
        for v in validity if v.target_name in ran
    ]})


async def _with_incontext(
    data: ReportData, rows: Sequence[InContextRecord], open_rows: Sequence[InContextOpenRecord], *,
    exclude_qids: frozenset[int], langs: list[str], snapshot_id: str, seed: int, jury: Sequence[InContextJuryRow] = (),
) -> ReportData:
    """`data` with the in-context track's sections: its multiple-choice figures and its short answers (with the
    jury's verdicts `jury` of them), each apart (never pooled with the parametric rows, nor with each other)."""
    if rows:
        kept = [r for r in rows if r.qid not in exclude_qids]
        data = data.model_copy(update={"incontext": await asyncio.to_thread(
            partial(incontext_results, kept, languages=langs, snapshot_id=snapshot_id, seed=seed))})
    if open_rows:
        data = data.model_copy(update={"incontext_open": await asyncio.to_thread(partial(
            incontext_open_results, [r for r in open_rows if r.open_qid not in exclude_qids], languages=langs,
            snapshot_id=snapshot_id, seed=seed, jury=[j for j in jury if j.open_qid not in exclude_qids]))})
    return data


def _outcomes(rows: Sequence[JobResultRow], exclude_qids: frozenset[int]) -> list[Outcome]:
    """The stored results as outcomes (public qids and entity ids), the retracted questions left out."""
    out = [
        Outcome(
            model=r.target_model, strategy=r.strategy, scorer=r.scorer, variant=r.variant, train_lang=r.train_lang,
            lang=r.lang, qid=stable_qid(r.source, r.external_id, r.slot), domain=r.domain, correct=r.correct,
            predicted=r.predicted, split=r.split, entity=r.entity_id or None,
            entity_public=stable_entity_id(r.source, r.external_id), seed=r.seed,
        )
        for r in rows
    ]
    return [o for o in out if o.qid not in exclude_qids] if exclude_qids else out


def _control(jobs: list[JobInfo], notes: list[str]) -> list[ControlLang]:
    out: list[ControlLang] = []
    for j in jobs:
        if j.status != "done" or not j.control:
            continue
        for scorer, langs in sorted(j.control.items()):
            for lang, c in sorted(langs.items()):
                try:
                    stat = stat_from_counts(n=c.n, base_correct=c.base_correct, injected_correct=c.injected_correct,
                                            gained=c.gained, lost=c.lost)
                except ValueError as e:
                    notes.append(f"job {j.job_id}: its control counts for {scorer}/{lang} are unreadable ({e}); left out")
                    continue
                out.append(ControlLang(model=j.model, strategy=j.strategy, scorer=scorer, train_lang=j.train_lang, lang=lang, stat=stat))
    return out


def build_report(
    snapshot_id: str, languages: list[str], jobs: list[JobInfo], outcomes: list[Outcome], seed: int = 0, *,
    public: Mapping[int, int] | None = None, other_seeds: Sequence[Outcome] = (), seeded: SeedTables | None = None,
) -> ReportData:
    """The report's data; `public`: store entity id -> public id, the order of the bootstrap's draws (default: the
    outcomes' own, `Outcome.entity_public`); `other_seeds`: the answers of the jobs of other training seeds than
    `outcomes`' (each group's lowest: `primary_seed`), which Learn, the learned flags, the pairs and the asymmetry
    tests pool; `seeded`: the groups run with several seeds, their Table 2 pooled over them
    (`clkt.report.seed_report`)."""
    notes: list[str] = []
    failed = [j for j in jobs if j.status == "failed"]
    if failed:
        notes.append(f"{len(failed)} job(s) failed: " + "; ".join(f"{j.model}/{j.strategy}/{j.train_lang}: {(j.error or '')[:160]}" for j in failed))
    real = outcomes  # the control split never reaches the store's results (see _control)
    tests = [o for o in real if o.split == "test"]
    public = Outcome.public_ids(outcomes) if public is None else public
    draws = entity_draws([o.cluster for o in tests], snapshot_id=snapshot_id, seed=seed, samples=BOOTSTRAP_SAMPLES,
                         public=public)
    every = [*real, *other_seeds]
    learn = learn_tests(every, draws=draws)
    not_learned = {(t.model, t.strategy, t.scorer, t.train_lang) for t in learn if t.domain == ALL_DOMAINS and not t.learned}
    for t in learn:
        if t.domain == ALL_DOMAINS and not t.learned:
            st = t.stat
            notes.append(
                f"{t.model} / {t.strategy} / {t.scorer}, trained in {t.train_lang}, did not learn: {t.train_lang} accuracy "
                f"{st.base_correct}/{st.n} before, {st.injected_correct}/{st.n} after (exact McNemar p = {st.p_value:.3g}); "
                "its Transfer cells are not interpretable and are left out of the Transfer means"
            )
    base = base_accuracy(real, draws=draws)
    for b in base:
        if b.flagged:
            notes.append(
                f"base model {b.model} answers {b.lang} at {100 * (b.accuracy or 0):.0f}% ({b.scorer}, n={b.n}), above "
                f"chance (25%; exact one-sided binomial p = {b.p_above_chance or 0:.2g} < {BASE_FLAG_P}): it may know some "
                "of these entities, which were meant to be unseen by it"
            )
    parses = sorted({j.parse for j in jobs if j.parse})
    if parses:
        notes.append(
            "`generate` letters parsed with the " + " and ".join(f"`{p}`" for p in parses) + " rule"
            + ("" if parses == ["reference"] else "; only `reference` (the reference code's rule) compares with the paper's numbers")
        )
    pf = [{"model": m, "strategy": s, "variant": v, "rate": r} for (m, s, v), r in parse_failure_rates(real).items()]
    data = ReportData(
        snapshot_id=snapshot_id, languages=languages, jobs=jobs,
        table2=table2(real, every, languages, seeded, seed=seed, not_learned=not_learned, snapshot_id=snapshot_id,
                      public=public),
        pairs=pair_metrics(every, languages), asymmetry=mcnemar_tests(every, languages), base=base,
        parse_failures=pf, notes=notes, learn=learn,
    )
    ctrl = _control(jobs, data.notes)
    data.control.extend(ctrl)
    data.control_learn.extend(
        LearnTest(model=c.model, strategy=c.strategy, scorer=c.scorer, train_lang=c.train_lang, domain=ALL_DOMAINS, control=True, stat=c.stat)
        for c in ctrl if c.lang == c.train_lang
    )
    # the multiple-choice scorers' (the open scorer's kept % is the open section's, `clkt.report.open_locality`)
    data.locality.extend(k for k in kept_langs(jobs, snapshot_id=snapshot_id, seed=seed, samples=BOOTSTRAP_SAMPLES,
                                               public=public) if not is_open(k.scorer))
    missing = [p for p in data.pairs if p.missing and p.domain == ALL_DOMAINS]
    if missing:
        data.notes.append(
            "missing pairs (no questions answered in a language): "
            + ", ".join(sorted({f"{p.train_lang}->{p.test_lang}" for p in missing}))
        )
    data.summary.extend(in_short(data))
    return data


async def write_report(
    store: Store, snapshot_id: str, out_dir: Path, *, exclude_qids: frozenset[int] = frozenset(),
    spec: SpecSettings | None = None,
) -> ReportPaths:
    data = await load_report_data(store, snapshot_id, exclude_qids=exclude_qids, spec=spec)
    return await asyncio.to_thread(write_report_files, data, out_dir)


def write_report_files(data: ReportData, out: Path) -> ReportPaths:
    out.mkdir(parents=True, exist_ok=True)
    table_csv = out / "table2.csv"
    _write_table2(data, table_csv)
    pairs_csv = out / "pairs.csv"
    _write_pairs(data, pairs_csv)
    learn_csv = out / "learn.csv"
    with learn_csv.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["split", "model", "strategy", "scorer", "train_lang", "domain", "n", "base_correct", "injected_correct",
                    "base_accuracy", "base_ci_low", "base_ci_high", "injected_accuracy", "injected_ci_low", "injected_ci_high",
                    "gain", "gain_ci_low", "gain_ci_high", "gained", "lost", "p_value", "learned"])
        for t in [*data.learn, *data.control_learn]:
            st = t.stat
            bc, ic, gc = st.base_ci or (None, None), st.injected_ci or (None, None), st.gain_ci or (None, None)
            w.writerow(["control" if t.control else "real", t.model, t.strategy, t.scorer, t.train_lang, t.domain, st.n,
                        st.base_correct, st.injected_correct, pct(st.base_accuracy), pct(bc[0]), pct(bc[1]),
                        pct(st.injected_accuracy), pct(ic[0]), pct(ic[1]), pct(st.gain), pct(gc[0]), pct(gc[1]),
                        st.gained, st.lost, f"{st.p_value:.4g}", t.learned])
    if data.locality:  # only with a locality split: a snapshot without one writes the same files as before
        with (out / "locality.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([*KEPT_HEADER[:-1], "kept_pct", "ci_low", "ci_high", "too_few"])
            for k in data.locality:
                ci = k.ci or (None, None)
                w.writerow([*kept_row(k)[:-1], pct(k.rate), pct(ci[0]), pct(ci[1]), k.too_few])
    json_path = out / "metrics.json"
    dumped = data.model_dump(mode="json", exclude={"knowledge"} if not data.knowledge else None)
    json_path.write_text(json.dumps(dumped, ensure_ascii=False, indent=1), encoding="utf-8")

    figures = heatmaps(data, out) + size_plots(data, out)
    md = out / "report.md"

    md.write_text(markdown(data, figures), encoding="utf-8")
    return ReportPaths(
        directory=out, markdown=md, json=json_path, table_csv=table_csv, pairs_csv=pairs_csv, figures=figures, learn_csv=learn_csv
    )


def _write_table2(data: ReportData, path: Path) -> None:
    """A row per Table 2 cell: per metric of `PAIR_METRICS`, `<key>_mean, _std, _ci_low, _ci_high` (in %)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "strategy", "scorer", "domain",
                    *[f"{m.key}_{x}" for m in PAIR_METRICS for x in ("mean", "std", "ci_low", "ci_high")],
                    "pairs", "transfer_undefined", "missing"])
        for c in data.table2:
            row: list[object] = [c.model, c.strategy, c.scorer, c.domain]
            for m in PAIR_METRICS:
                got = c.metric(m.key)
                ci = got.ci or (None, None)
                row += [pct(got.mean), pct(got.std), pct(ci[0]), pct(ci[1])]
            w.writerow([*row, c.pairs, c.transfer_undefined, c.missing])


def _write_pairs(data: ReportData, path: Path) -> None:
    """A row per language pair: its contingency, each metric (`undefined` where its denominator is 0), whether its
    job learned, and a reading per metric that has an interpretable-when rule (`<key>_reading`)."""
    reads = [m for m in PAIR_METRICS if m.reads]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "strategy", "scorer", "domain", "train_lang", "test_lang", "A", "B", "C", "D",
                    *PAIR_METRICS.ordered_keys(), "missing", "a_plus_b", "job_learned", *[f"{m.key}_reading" for m in reads]])
        for p in data.pairs:
            ct = p.table
            learned = data.job_learned(p.model, p.strategy, p.scorer, p.train_lang)
            values = [("undefined" if (v is None and not p.missing) else pct(v)) for v in (p.metric(k) for k in PAIR_METRICS.ordered_keys())]
            w.writerow([p.model, p.strategy, p.scorer, p.domain, p.train_lang, p.test_lang, ct.a, ct.b, ct.c, ct.d,
                        *values, p.missing, ct.a + ct.b, "" if learned is None else learned,
                        *[pair_reading(data, p, m) for m in reads]])


def render_tables(data: ReportData) -> list[Table]:
    from rich.table import Table

    tables: list[Table] = []
    if data.learn:
        t = Table(*LEARN_HEADER, title="Learn: train-language accuracy, base vs injected (exact McNemar)")
        for r in learn_rows(data.learn):
            t.add_row(*r)
        tables.append(t)
    for title, label, _, cells in scenarios(data):
        header, rows = grid(data, label, cells)
        t = Table(*header, title=f"{title} (mean ± std over language pairs [95% CI, bootstrap over entities], %)")
        for r in rows:
            t.add_row(*r)
        tables.append(t)
    if data.control_learn:
        t = Table(*LEARN_HEADER, title="Control split (fictional entities): Learn")
        for r in learn_rows(data.control_learn):
            t.add_row(*r)
        tables.append(t)
    if data.open_track is not None and data.open_track.learn:  # the open track: its own table, never pooled
        t = Table(*LEARN_HEADER, title=f"{OPEN_TITLE}: Learn (report.md has its Overall, Transfer and paired view)")
        for r in learn_rows(data.open_track.learn):
            t.add_row(*r)
        tables.append(t)
    if data.base:
        t = Table("model", "scorer", *data.languages, title=f"Base model accuracy per language, % [95% CI] (n; chance = 25%; ! = {BASE_FLAG_MEANS})")
        by: dict[tuple[str, str], dict[str, BaseAccuracy]] = defaultdict(dict)
        for b in data.base:
            by[(b.model, b.scorer)][b.lang] = b
        for (model, scorer), langs in sorted(by.items()):
            t.add_row(model, scorer, *[
                ("missing" if lang not in langs else base_cell(langs[lang]))
                for lang in data.languages
            ])
        tables.append(t)
    return tables
