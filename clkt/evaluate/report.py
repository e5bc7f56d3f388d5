"""The report of a snapshot: the paper's Table 2 (both scenarios), heatmaps, size curves, CSV/JSON/Markdown.

`write_report(store, snapshot_id, out_dir)` reads the finished jobs' results, computes `clkt.evaluate.metrics`
and writes into `out_dir` (by default `<data_dir>/reports/<snapshot_id>/`):

- `table2.csv` (model x strategy x scorer x domain, mean ± std over pairs, bootstrap CIs), `pairs.csv`
  (A/B/C/D per ordered pair, whether its job learned, whether A+B is too small), `learn.csv` (Learn per
  job: base against injected in the train language, exact McNemar p), `metrics.json` (everything, plus base
  accuracy and the asymmetry tests);
- `heatmap-<model>-<strategy>-<scorer>.png` (`clkt.evaluate.figures`): Transfer, L_train x L_test (the paper's Figure 3); every cell
  shows its n (A+B); cells under `MIN_CELL_N` questions and the rows of jobs that did not learn are grey;
- `size-<family>-<strategy>-<scorer>.png`: Overall/Transfer against model size per domain when the spec has
  several sizes of a family (Figure 4);
- `report.md`, embedding them, opening with what was learned, what transferred and what is too small to
  say. `render_tables()` gives the rich tables `clkt report` prints.

Control questions (the snapshot's fictional entities) never enter the real scores (they are not store rows):
each job keeps their paired counts per scorer and language in `GpuJob.summary["control"]`, and the report
shows them apart, base against injected per language, as the positive control of injection.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from clkt.evaluate.learn import LearnStat, LearnTest, learn_tests, stat_from_counts, wilson_ci
from clkt.evaluate.metrics import (
    ALL_DOMAINS,
    AVG_DOMAINS,
    AsymmetryTest,
    BaseAccuracy,
    Outcome,
    PairMetrics,
    SummaryCell,
    base_accuracy,
    fmt,
    mcnemar_tests,
    pair_metrics,
    parse_failure_rates,
    summarize,
)

if TYPE_CHECKING:
    from rich.table import Table

    from storage.engine import Store

__all__ = [
    "MIN_CELL_N",
    "ControlLang",
    "ReportData",
    "ReportPaths",
    "report_dir",
    "load_report_data",
    "build_report",
    "write_report",
    "write_report_files",
    "render_tables",
]

MIN_CELL_N = 10  # a Transfer cell on fewer questions (A+B) is too small to say anything: grey, never coloured


def report_dir(data_dir: Path, snapshot_id: str) -> Path:
    return data_dir / "reports" / snapshot_id


class JobInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    job_id: int
    model: str
    strategy: str
    train_lang: str
    status: str
    best_epoch: int | None = None
    error: str | None = None
    family: str | None = None
    size_b: float | None = None
    parse: str | None = None  # how `generate` read the letters: "strict" or "reference"
    # the control split's paired counts (GpuJob.summary["control"]): scorer -> test language -> n, base_correct, ...
    control: dict[str, Any] | None = None


class ControlLang(BaseModel):
    """The control split of one job in one test language: base against injected on the same questions."""

    model_config = ConfigDict(frozen=True)

    model: str
    strategy: str
    scorer: str
    train_lang: str
    lang: str
    stat: LearnStat


class ReportData(BaseModel):
    model_config = ConfigDict(frozen=True)

    snapshot_id: str
    languages: list[str]
    jobs: list[JobInfo]
    table2: list[SummaryCell]
    pairs: list[PairMetrics]
    asymmetry: list[AsymmetryTest]
    base: list[BaseAccuracy]
    parse_failures: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    learn: list[LearnTest] = Field(default_factory=list)
    control_learn: list[LearnTest] = Field(default_factory=list)  # the control split in the train language
    control: list[ControlLang] = Field(default_factory=list)  # ... in every language
    min_cell_n: int = MIN_CELL_N
    summary: list[str] = Field(default_factory=list)  # "In short": learned, transferred, too small to say

    def job_learned(self, model: str, strategy: str, scorer: str, train_lang: str) -> bool | None:
        """None: no Learn test (no base or injected answers in the train language)."""
        for t in self.learn:
            if (t.model, t.strategy, t.scorer, t.train_lang, t.domain) == (model, strategy, scorer, train_lang, ALL_DOMAINS):
                return t.learned
        return None


@dataclass(frozen=True, slots=True)
class ReportPaths:
    directory: Path
    markdown: Path
    json: Path
    table_csv: Path
    pairs_csv: Path
    figures: list[Path] = field(default_factory=list)
    learn_csv: Path | None = None


async def load_report_data(store: Store, snapshot_id: str, *, seed: int = 0) -> ReportData:
    from clkt.snapshots.ids import stable_qid
    from storage.gpu_jobs import jobs_for_snapshot, results_for_snapshot
    from storage.snapshots import find_snapshot

    async with store.session() as s:
        snap = await find_snapshot(s, snapshot_id)
        if snap is None:
            from clkt.errors import UserError

            raise UserError(f"no snapshot {snapshot_id!r} in the store")
        jobs = await jobs_for_snapshot(s, snapshot_id)
        rows = await results_for_snapshot(s, snapshot_id)
        manifest = dict(snap.manifest or {})
    infos = [
        JobInfo(
            job_id=j.id, model=j.target_model, strategy=j.strategy, train_lang=j.train_lang, status=j.status.value,
            best_epoch=j.best_epoch, error=j.last_error, family=(j.summary or {}).get("target_family"),
            size_b=(j.summary or {}).get("target_size_b"), parse=(j.summary or {}).get("generate_parse"),
            control=(j.summary or {}).get("control") or None,
        )
        for j in jobs
    ]
    langs = list(manifest.get("languages") or sorted({r.lang for r in rows} | {j.train_lang for j in jobs}))
    outcomes = [
        Outcome(
            model=r.target_model, strategy=r.strategy, scorer=r.scorer, variant=r.variant, train_lang=r.train_lang,
            lang=r.lang, qid=stable_qid(r.source, r.external_id, r.slot), domain=r.domain, correct=r.correct, predicted=r.predicted, split=r.split,
        )
        for r in rows
    ]
    return await asyncio.to_thread(build_report, snapshot_id, langs, infos, outcomes, seed)


def _control(jobs: list[JobInfo], notes: list[str]) -> list[ControlLang]:
    out: list[ControlLang] = []
    for j in jobs:
        if j.status != "done" or not j.control:
            continue
        for scorer, langs in sorted(j.control.items()):
            for lang, c in sorted(langs.items() if isinstance(langs, dict) else []):
                try:
                    stat = stat_from_counts(**{k: int(c[k]) for k in ("n", "base_correct", "injected_correct", "gained", "lost")})
                except (KeyError, TypeError, ValueError) as e:
                    notes.append(f"job {j.job_id}: its control counts for {scorer}/{lang} are unreadable ({e}); left out")
                    continue
                out.append(ControlLang(model=j.model, strategy=j.strategy, scorer=scorer, train_lang=j.train_lang, lang=lang, stat=stat))
    return out


def build_report(snapshot_id: str, languages: list[str], jobs: list[JobInfo], outcomes: list[Outcome], seed: int = 0) -> ReportData:
    notes: list[str] = []
    failed = [j for j in jobs if j.status == "failed"]
    if failed:
        notes.append(f"{len(failed)} job(s) failed: " + "; ".join(f"{j.model}/{j.strategy}/{j.train_lang}: {(j.error or '')[:160]}" for j in failed))
    real = outcomes  # the control split never reaches the store's results (see _control)
    learn = learn_tests(real)
    not_learned = {(t.model, t.strategy, t.scorer, t.train_lang) for t in learn if t.domain == ALL_DOMAINS and not t.learned}
    for t in learn:
        if t.domain == ALL_DOMAINS and not t.learned:
            st = t.stat
            notes.append(
                f"{t.model} / {t.strategy} / {t.scorer}, trained in {t.train_lang}, did not learn: {t.train_lang} accuracy "
                f"{st.base_correct}/{st.n} before, {st.injected_correct}/{st.n} after (exact McNemar p = {st.p_value:.3g}); "
                "its Transfer cells are not interpretable and are left out of the Transfer means"
            )
    base = base_accuracy(real)
    for b in base:
        if b.flagged:
            notes.append(
                f"base model {b.model} answers {b.lang} at {100 * (b.accuracy or 0):.0f}% ({b.scorer}, n={b.n}), far above "
                "chance (25%): these entities may not be unseen by it"
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
        table2=summarize(real, languages, seed=seed, not_learned=not_learned),
        pairs=pair_metrics(real, languages), asymmetry=mcnemar_tests(real, languages), base=base,
        parse_failures=pf, notes=notes, learn=learn,
    )
    ctrl = _control(jobs, data.notes)
    data.control.extend(ctrl)
    data.control_learn.extend(
        LearnTest(model=c.model, strategy=c.strategy, scorer=c.scorer, train_lang=c.train_lang, domain=ALL_DOMAINS, control=True, stat=c.stat)
        for c in ctrl if c.lang == c.train_lang
    )
    missing = [p for p in data.pairs if p.missing and p.domain == ALL_DOMAINS]
    if missing:
        data.notes.append(
            "missing pairs (no questions answered in a language): "
            + ", ".join(sorted({f"{p.train_lang}->{p.test_lang}" for p in missing}))
        )
    data.summary.extend(_in_short(data))
    return data


def _ci_txt(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def _in_short(data: ReportData) -> list[str]:
    """Plain sentences: what was learned, what transferred, what is too small to say."""
    out: list[str] = []
    for label, tests in (("real entities", data.learn), ("control (fictional) entities", data.control_learn)):
        for t in tests:
            if t.domain != ALL_DOMAINS:
                continue
            st = t.stat
            verdict = "learned" if t.learned else "did NOT learn (significantly)"
            out.append(
                f"Learn, {label}: {t.model} / {t.strategy} / {t.scorer} trained in {t.train_lang} {verdict}: "
                f"{100 * (st.base_accuracy or 0):.0f}%{_ci_txt(st.base_ci)} → {100 * (st.injected_accuracy or 0):.0f}%"
                f"{_ci_txt(st.injected_ci)} on n = {st.n} {t.train_lang} questions, gain {100 * (st.gain or 0):+.0f} points"
                f"{_ci_txt(st.gain_ci)}, exact McNemar p = {st.p_value:.3g}."
            )
    others: dict[tuple[str, str, str, str], list[ControlLang]] = defaultdict(list)
    for cl in data.control:
        if cl.lang != cl.train_lang:
            others[(cl.model, cl.strategy, cl.scorer, cl.train_lang)].append(cl)
    for (model, strategy, scorer, lt), cls in sorted(others.items()):
        sig = [cl.lang for cl in cls if cl.stat.learned]
        out.append(
            f"Control, other languages: {model} / {strategy} / {scorer} trained in {lt} gained significantly in "
            f"{len(sig)} of {len(cls)} ({', '.join(sig) or 'none'}); n per language = {', '.join(f'{cl.lang}: {cl.stat.n}' for cl in cls)}."
        )
    for c in data.table2:
        if c.domain != ALL_DOMAINS:
            continue
        if c.transfer_mean is None:
            why = "no job of it learned" if c.not_interpretable else "no pair had A+B > 0"
            out.append(f"Transfer, {c.model} / {c.strategy} / {c.scorer}: not interpretable ({why}).")
        else:
            out.append(
                f"Transfer, {c.model} / {c.strategy} / {c.scorer}: mean {100 * c.transfer_mean:.1f}%{_ci_txt(c.transfer_ci)} over "
                f"{c.pairs - c.not_interpretable - c.transfer_undefined} language pair(s)"
                + (f" ({c.not_interpretable} pairs of jobs that did not learn left out)" if c.not_interpretable else "") + "."
            )
    small = [p for p in data.pairs if p.domain == ALL_DOMAINS and not p.missing and p.table.a + p.table.b < data.min_cell_n]
    total = sum(1 for p in data.pairs if p.domain == ALL_DOMAINS and not p.missing)
    if small:
        out.append(
            f"Too small to say: {len(small)} of {total} Transfer cells rest on fewer than {data.min_cell_n} questions "
            "(A+B); they are grey in the heatmaps and marked `too few` in pairs.csv — read them as noise, not as 0 % or 100 %."
        )
    return out


async def write_report(store: Store, snapshot_id: str, out_dir: Path) -> ReportPaths:
    data = await load_report_data(store, snapshot_id)
    return await asyncio.to_thread(write_report_files, data, out_dir)


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.2f}"


def write_report_files(data: ReportData, out: Path) -> ReportPaths:
    out.mkdir(parents=True, exist_ok=True)
    table_csv = out / "table2.csv"
    with table_csv.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "strategy", "scorer", "domain", "overall_mean", "overall_std", "overall_ci_low", "overall_ci_high",
                    "transfer_mean", "transfer_std", "transfer_ci_low", "transfer_ci_high", "pairs", "transfer_undefined", "missing"])
        for c in data.table2:
            oc, tc = c.overall_ci or (None, None), c.transfer_ci or (None, None)
            w.writerow([c.model, c.strategy, c.scorer, c.domain, _pct(c.overall_mean), _pct(c.overall_std), _pct(oc[0]), _pct(oc[1]),
                        _pct(c.transfer_mean), _pct(c.transfer_std), _pct(tc[0]), _pct(tc[1]), c.pairs, c.transfer_undefined, c.missing])
    pairs_csv = out / "pairs.csv"
    with pairs_csv.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "strategy", "scorer", "domain", "train_lang", "test_lang", "A", "B", "C", "D", "overall", "transfer",
                    "missing", "a_plus_b", "job_learned", "transfer_reading"])
        for p in data.pairs:
            t = p.table
            learned = data.job_learned(p.model, p.strategy, p.scorer, p.train_lang)
            w.writerow([p.model, p.strategy, p.scorer, p.domain, p.train_lang, p.test_lang, t.a, t.b, t.c, t.d,
                        _pct(p.overall), "undefined" if (p.transfer is None and not p.missing) else _pct(p.transfer), p.missing,
                        t.a + t.b, "" if learned is None else learned, _reading(data, p)])
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
                        st.base_correct, st.injected_correct, _pct(st.base_accuracy), _pct(bc[0]), _pct(bc[1]),
                        _pct(st.injected_accuracy), _pct(ic[0]), _pct(ic[1]), _pct(st.gain), _pct(gc[0]), _pct(gc[1]),
                        st.gained, st.lost, f"{st.p_value:.4g}", t.learned])
    json_path = out / "metrics.json"
    json_path.write_text(json.dumps(data.model_dump(mode="json"), ensure_ascii=False, indent=1), encoding="utf-8")
    from clkt.evaluate.figures import heatmaps, size_plots

    figures = heatmaps(data, out) + size_plots(data, out)
    md = out / "report.md"
    from clkt.evaluate.markdown import markdown

    md.write_text(markdown(data, figures), encoding="utf-8")
    return ReportPaths(
        directory=out, markdown=md, json=json_path, table_csv=table_csv, pairs_csv=pairs_csv, figures=figures, learn_csv=learn_csv
    )


def _reading(data: ReportData, p: PairMetrics) -> str:
    """How to read a pair's Transfer: `ok`, `missing`, `undefined`, `not interpretable` or `too few`."""
    if p.missing:
        return "missing"
    if data.job_learned(p.model, p.strategy, p.scorer, p.train_lang) is False:
        return "not interpretable"
    if p.transfer is None:
        return "undefined"
    if p.table.a + p.table.b < data.min_cell_n:
        return "too few"
    return "ok"


def _domains(data: ReportData) -> list[str]:
    doms = sorted({c.domain for c in data.table2} - {ALL_DOMAINS, AVG_DOMAINS})
    return [*doms, AVG_DOMAINS]


def _scenarios(data: ReportData) -> list[tuple[str, str, str, list[SummaryCell]]]:
    """(title, row label, scorer, cells): rows = models per strategy, and rows = strategies per model."""
    out: list[tuple[str, str, str, list[SummaryCell]]] = []
    for scorer in sorted({c.scorer for c in data.table2}):
        for strategy in sorted({c.strategy for c in data.table2}):
            cells = [c for c in data.table2 if c.scorer == scorer and c.strategy == strategy]
            out.append((f"Model comparison — {strategy}, {scorer}", "model", scorer, cells))
        for model in sorted({c.model for c in data.table2}):
            cells = [c for c in data.table2 if c.scorer == scorer and c.model == model]
            if len({c.strategy for c in cells}) > 1:
                out.append((f"Strategy comparison — {model}, {scorer}", "strategy", scorer, cells))
    return out


def _grid(data: ReportData, label: str, cells: list[SummaryCell]) -> tuple[list[str], list[list[str]]]:
    doms = _domains(data)
    header = [label] + [f"{d} Overall" for d in doms] + [f"{d} Transfer" for d in doms]
    rows: list[list[str]] = []
    for key in sorted({getattr(c, label) for c in cells}):
        by = {c.domain: c for c in cells if getattr(c, label) == key}
        row = [key]
        row += [_cell(by[d].overall_mean, by[d].overall_std, by[d].overall_ci) if d in by else "missing" for d in doms]
        row += [_transfer_cell(by[d]) if d in by else "missing" for d in doms]
        rows.append(row)
    return header, rows


def _cell(mean: float | None, std: float | None, ci: tuple[float, float] | None) -> str:
    """`mean ± std [95% CI]`, in %."""
    if mean is None:
        return "n/a"
    return fmt(mean, std) + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else " [CI n/a]")


def _transfer_cell(c: SummaryCell) -> str:
    if c.transfer_mean is None:
        return "not interpretable" if c.not_interpretable else "undefined"
    return _cell(c.transfer_mean, c.transfer_std, c.transfer_ci) + (f" ({c.not_interpretable} n.i.)" if c.not_interpretable else "")


def _learn_rows(tests: list[LearnTest]) -> list[list[str]]:
    rows: list[list[str]] = []
    for t in tests:
        if t.domain != ALL_DOMAINS:
            continue
        st = t.stat
        rows.append([
            t.model, t.strategy, t.scorer, t.train_lang, str(st.n),
            f"{_pct1(st.base_accuracy)}{_ci_txt(st.base_ci)}", f"{_pct1(st.injected_accuracy)}{_ci_txt(st.injected_ci)}",
            f"{100 * (st.gain or 0):+.1f}{_ci_txt(st.gain_ci)}", f"{st.gained}/{st.lost}", f"{st.p_value:.3g}",
            "yes" if t.learned else "NO: Transfer not interpretable",
        ])
    return rows


LEARN_HEADER = ["model", "strategy", "scorer", "train", "n", "base % [CI]", "injected % [CI]", "gain pts [CI]", "gained/lost",
                "McNemar p", "learned"]


def _base_cell(b: BaseAccuracy) -> str:
    k = round((b.accuracy or 0) * b.n)
    return f"{_pct1(b.accuracy)}{_ci_txt(wilson_ci(k, b.n))} (n={b.n}){' !' if b.flagged else ''}"


def _pct1(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def render_tables(data: ReportData) -> list[Table]:
    from rich.table import Table

    tables: list[Table] = []
    if data.learn:
        t = Table(*LEARN_HEADER, title="Learn: train-language accuracy, base vs injected (exact McNemar)")
        for r in _learn_rows(data.learn):
            t.add_row(*r)
        tables.append(t)
    for title, label, _, cells in _scenarios(data):
        header, rows = _grid(data, label, cells)
        t = Table(*header, title=f"{title} (mean ± std over language pairs [95% CI], %)")
        for r in rows:
            t.add_row(*r)
        tables.append(t)
    if data.control_learn:
        t = Table(*LEARN_HEADER, title="Control split (fictional entities): Learn")
        for r in _learn_rows(data.control_learn):
            t.add_row(*r)
        tables.append(t)
    if data.base:
        t = Table("model", "scorer", *data.languages, title="Base model accuracy per language, % [95% CI] (n; chance = 25%; ! = far above)")
        by: dict[tuple[str, str], dict[str, BaseAccuracy]] = defaultdict(dict)
        for b in data.base:
            by[(b.model, b.scorer)][b.lang] = b
        for (model, scorer), langs in sorted(by.items()):
            t.add_row(model, scorer, *[
                ("missing" if lang not in langs else _base_cell(langs[lang]))
                for lang in data.languages
            ])
        tables.append(t)
    return tables
