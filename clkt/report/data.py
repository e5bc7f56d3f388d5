"""The report's data (`ReportData`: jobs, Learn tests, Table 2 cells, pairs, control) and how its cells read.

`clkt.report.writer` builds it from the store and writes the files; the Markdown (`clkt.report.markdown`),
the heatmaps (`clkt.report.figures`), the rich tables and the status pages all format it with the helpers
here, so a cell reads the same everywhere: n beside every figure, "not interpretable" for the Transfer of a
job that did not learn, "too few" under `MIN_CELL_N`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clkt.evaluate.summary import ControlCounts, LocalityCounts
from clkt.report.basics import MIN_CELL_N, ci1_text
from clkt.report.cutoff_curve import TargetKnowledge
from clkt.report.incontext import InContextTarget
from clkt.report.incontext_open import InContextOpenTarget
from clkt.report.leaderboard_data import LeaderRow
from clkt.report.learn import LearnStat, LearnTest
from clkt.report.locality import KeptLang, locality_lines
from clkt.report.metric_table import HEATMAP, PAIR_METRICS, TRANSFER, PairMetric
from clkt.report.metrics import (
    ALL_DOMAINS,
    AVG_DOMAINS,
    AsymmetryTest,
    BaseAccuracy,
    PairMetrics,
    SummaryCell,
    fmt,
)
from clkt.report.open_track import OpenTrack
from clkt.report.stats import wilson_ci

__all__ = [
    "COST_HEADER",
    "COST_NOTE",
    "DOMAIN_HEADINGS",
    "LEARN_HEADER",
    "MIN_CELL_N",
    "ControlLang",
    "JobInfo",
    "ReportData",
    "TargetValidity",
    "base_cell",
    "cell_text",
    "ci1_text",
    "ci_text",
    "cost_cells",
    "domains_of",
    "grid",
    "in_short",
    "learn_rows",
    "metric_cell",
    "pair_reading",
    "pct",
    "pct1",
    "scenarios",
    "slug",
]




class JobInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    job_id: int
    model: str
    strategy: str
    train_lang: str
    status: str
    best_epoch: int | None = None
    # the open track's epoch where the job chose it apart (`clkt.inject.open_val`); left out of metrics.json when not
    open_epoch: int | None = Field(default=None, exclude_if=lambda v: v is None)
    error: str | None = None
    family: str | None = None
    size_b: float | None = None
    parse: str | None = None  # how `generate` read the letters: "strict" or "reference"
    # the control split's paired counts (the job summary's `control`): scorer -> test language -> counts
    control: dict[str, dict[str, ControlCounts]] | None = None
    # what the job cost (the job summary's; left out of metrics.json when not recorded)
    wall_s: float | None = Field(default=None, exclude_if=lambda v: v is None)
    inject_s: float | None = Field(default=None, exclude_if=lambda v: v is None)
    peak_memory_bytes: int | None = Field(default=None, exclude_if=lambda v: v is None)
    peak_memory_kind: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # the locality split's paired counts (the job summary's `locality`); left out of metrics.json when none
    locality: dict[str, dict[str, LocalityCounts]] | None = Field(default=None, exclude_if=lambda v: not v)


class TargetValidity(BaseModel):
    """How many of the snapshot's entities were valid for a target whose jobs ran on it: a target added after the
    freeze is excluded from what it recognised (clkt.roster); its jobs have only the other entities' questions."""

    model_config = ConfigDict(frozen=True)

    target: str
    status: str
    entities: int
    excluded: int

    @property
    def valid(self) -> int:
        return self.entities - self.excluded


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
    # kept % per job x scorer x test language (`clkt.report.locality`); left out of metrics.json when none
    locality: list[KeptLang] = Field(default_factory=list, exclude_if=lambda v: not v)
    min_cell_n: int = MIN_CELL_N
    summary: list[str] = Field(default_factory=list)  # "In short": learned, transferred, too small to say
    # per target whose jobs ran on the snapshot: its entities and exclusions (left out of metrics.json when none
    # were recorded, as for a snapshot of the previous version)
    targets: list[TargetValidity] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the cutoff each target of the report really has, from the probe verdicts (`clkt.report.cutoff_curve`);
    # empty when the store holds no verdict of them (then metrics.json has no `knowledge` key)
    knowledge: list[TargetKnowledge] = Field(default_factory=list)
    # the in-context track (`clkt.report.incontext`): contextual, never pooled with the rows above; left out of
    # metrics.json when no target ran it on the snapshot
    incontext: list[InContextTarget] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the in-context track's short answers (`clkt.report.incontext_open`): apart from the rows above and from both
    # the in-context MCQ figures and the parametric open track; left out of metrics.json when none was asked
    incontext_open: list[InContextOpenTarget] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the groups whose jobs ran with several training seeds: their leaderboard rows, pooled over the seeds (the
    # figures of their Table 2 `all` cells) with each seed's value and the between-seed sd (`clkt.report.seed_report`);
    # left out of metrics.json when every job ran one seed
    seeds: list[LeaderRow] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the open track (`clkt.report.open_track`): the short-answer questions' figures, never pooled with the MCQ rows;
    # left out of metrics.json when no job answered them
    open_track: OpenTrack | None = Field(default=None, exclude_if=lambda v: v is None)

    def job_learned(self, model: str, strategy: str, scorer: str, train_lang: str) -> bool | None:
        """None: no Learn test (no base or injected answers in the train language)."""
        for t in self.learn:
            if (t.model, t.strategy, t.scorer, t.train_lang, t.domain) == (model, strategy, scorer, train_lang, ALL_DOMAINS):
                return t.learned
        return None


def ci_text(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def in_short(data: ReportData) -> list[str]:
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
                f"{100 * (st.base_accuracy or 0):.0f}%{ci_text(st.base_ci)} → {100 * (st.injected_accuracy or 0):.0f}%"
                f"{ci_text(st.injected_ci)} on n = {st.n} {t.train_lang} questions, gain {100 * (st.gain or 0):+.0f} points"
                f"{ci_text(st.gain_ci)}, exact McNemar p = {st.p_value:.3g}; "
                + ("95% CIs from a bootstrap over entities." if st.clustered is not None else
                   "95% CIs over questions (Wilson; the control split keeps counts, not entities).")
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
    out += locality_lines(data.locality)
    for c in data.table2:
        if c.domain != ALL_DOMAINS:
            continue
        tr = c.metric(TRANSFER.key)
        if tr.mean is None:
            why = "no job of it learned" if c.not_interpretable else "no pair had A+B > 0"
            out.append(f"Transfer, {c.model} / {c.strategy} / {c.scorer}: not interpretable ({why}).")
        else:
            out.append(
                f"Transfer, {c.model} / {c.strategy} / {c.scorer}: {100 * tr.mean:.1f}%{ci1_text(tr.ci)}, the mean over "
                f"{c.pairs - c.not_interpretable - c.transfer_undefined} language pair(s) of every domain's questions pooled "
                "(Table 2's `all pooled` column; 95% CI from a bootstrap over entities)"
                + (f" ({c.not_interpretable} pairs of jobs that did not learn left out)" if c.not_interpretable else "") + "."
            )
    small = [p for p in data.pairs if p.domain == ALL_DOMAINS and not p.missing and TRANSFER.n(p.table) < data.min_cell_n]
    total = sum(1 for p in data.pairs if p.domain == ALL_DOMAINS and not p.missing)
    if small:
        out.append(
            f"Too small to say: {len(small)} of {total} Transfer cells rest on fewer than {data.min_cell_n} questions "
            "(A+B); they are grey in the heatmaps and marked `too few` in pairs.csv — read them as noise, not as 0 % or 100 %."
        )
    return out


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"


def pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.2f}"


def pair_reading(data: ReportData, p: PairMetrics, metric: PairMetric = HEATMAP) -> str:
    """How to read a pair's value of `metric` (Transfer by default): `ok`, `missing`, `undefined`, `not
    interpretable` or `too few` (`PairMetric.reading`)."""
    return metric.reading(p.table, learned=data.job_learned(p.model, p.strategy, p.scorer, p.train_lang))


DOMAIN_HEADINGS = {ALL_DOMAINS: "all pooled", AVG_DOMAINS: "mean of domains"}  # what each column averages


def domains_of(data: ReportData) -> list[str]:
    """Table 2's columns: each domain, every domain's questions pooled (`all`: the summary's and the
    leaderboard's figure), and the unweighted mean of the domains (`avg`: the paper's Table 2)."""
    doms = sorted({c.domain for c in data.table2} - {ALL_DOMAINS, AVG_DOMAINS})
    return [*doms, ALL_DOMAINS, AVG_DOMAINS]


def scenarios(data: ReportData) -> list[tuple[str, str, str, list[SummaryCell]]]:
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


def grid(data: ReportData, label: str, cells: list[SummaryCell]) -> tuple[list[str], list[list[str]]]:
    """Table 2 of a scenario: a row per `label`, a column per metric of `PAIR_METRICS` x domain; a strategy
    comparison (one model, a row per strategy: the paper's second scenario) adds what its jobs cost
    (`COST_HEADER`, `cost_cells`)."""
    doms = domains_of(data)
    metrics = list(PAIR_METRICS)
    header = [label] + [f"{DOMAIN_HEADINGS.get(d, d)} {m.label}" for m in metrics for d in doms]
    cost = label == "strategy" and len({c.model for c in cells}) == 1
    rows: list[list[str]] = []
    for key in sorted({getattr(c, label) for c in cells}):
        by = {c.domain: c for c in cells if getattr(c, label) == key}
        rows.append([key] + [metric_cell(by[d], m) if d in by else "missing" for m in metrics for d in doms]
                    + (cost_cells(data.jobs, cells[0].model, key) if cost else []))
    return header + (COST_HEADER if cost else []), rows


COST_HEADER = ["wall time per job (inject)", "peak memory per job"]
COST_NOTE = ("One target, every strategy, on the same snapshot (the paper's second scenario); beside the scores, what "
             "each job cost per train language: its wall time (the injection step's in brackets) and its peak memory "
             "(`cuda`: torch's peak allocation on the device; `rss`: the job process's peak resident set).")


def _secs(x: float) -> str:
    return f"{x:.1f} s" if x < 10 else f"{x:.0f} s"


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def cost_cells(jobs: list[JobInfo], model: str, strategy: str) -> list[str]:
    """A strategy's jobs of a model, one per train language: wall time (the injection step's) and peak memory
    (`cuda`: torch's peak allocation on the device; `rss`: the job process's peak); "not recorded" for a job whose
    summary has none."""
    mine = sorted((j for j in jobs if (j.model, j.strategy) == (model, strategy)), key=lambda j: (j.train_lang, j.job_id))
    wall = [f"{j.train_lang} {_secs(j.wall_s)}" + (f" ({_secs(j.inject_s)})" if j.inject_s is not None else "")
            if j.wall_s is not None else f"{j.train_lang} not recorded" for j in mine]
    peak = [f"{j.train_lang} {_gib(j.peak_memory_bytes)} {j.peak_memory_kind or ''}".rstrip()
            if j.peak_memory_bytes is not None else f"{j.train_lang} not recorded" for j in mine]
    return ["; ".join(wall) or "no job", "; ".join(peak) or "no job"]


def cell_text(mean: float | None, std: float | None, ci: tuple[float, float] | None) -> str:
    """`mean ± std [95% CI]`, in %."""
    if mean is None:
        return "n/a"
    return fmt(mean, std) + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else " [CI n/a]")


def metric_cell(c: SummaryCell, metric: PairMetric) -> str:
    """A Table 2 cell; a metric that needs its jobs to have learned says why it has no value, and how many
    pairs it left out (n.i.)."""
    got = c.metric(metric.key)
    if not metric.needs_learned:
        return cell_text(got.mean, got.std, got.ci)
    if got.mean is None:
        return "not interpretable" if c.not_interpretable else "undefined"
    return cell_text(got.mean, got.std, got.ci) + (f" ({c.not_interpretable} n.i.)" if c.not_interpretable else "")


def learn_rows(tests: list[LearnTest]) -> list[list[str]]:
    rows: list[list[str]] = []
    for t in tests:
        if t.domain != ALL_DOMAINS:
            continue
        st = t.stat
        rows.append([
            t.model, t.strategy, t.scorer, t.train_lang, str(st.n),
            f"{pct1(st.base_accuracy)}{ci_text(st.base_ci)}", f"{pct1(st.injected_accuracy)}{ci_text(st.injected_ci)}",
            f"{100 * (st.gain or 0):+.1f}{ci_text(st.gain_ci)}", f"{st.gained}/{st.lost}", f"{st.p_value:.3g}",
            "yes" if t.learned else "NO: Transfer not interpretable",
        ])
    return rows


LEARN_HEADER = ["model", "strategy", "scorer", "train", "n", "base % [CI]", "injected % [CI]", "gain pts [CI]", "gained/lost",
                "McNemar p", "learned"]


def base_cell(b: BaseAccuracy) -> str:
    k = round((b.accuracy or 0) * b.n)
    ci = b.ci if b.ci is not None else wilson_ci(k, b.n)
    return f"{pct1(b.accuracy)}{ci_text(ci)} (n={b.n}){' !' if b.flagged else ''}"


def pct1(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"
