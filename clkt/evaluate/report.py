"""The report of a snapshot: the paper's Table 2 (both scenarios), heatmaps, size curves, CSV/JSON/Markdown.

`write_report(store, snapshot_id, out_dir)` reads the finished jobs' results, computes `clkt.evaluate.metrics`
and writes into `out_dir` (by default `<data_dir>/reports/<snapshot_id>/`):

- `table2.csv` (model x strategy x scorer x domain, mean ± std over pairs, bootstrap CIs), `pairs.csv`
  (A/B/C/D per ordered pair), `metrics.json` (everything, plus base accuracy and McNemar tests);
- `heatmap-<model>-<strategy>-<scorer>.png`: Transfer, L_train x L_test (the paper's Figure 3);
- `size-<family>-<strategy>-<scorer>.png`: Overall/Transfer against model size per domain when the spec has
  several sizes of a family (Figure 4);
- `report.md`, embedding them. `render_tables()` gives the rich tables `clkt report` prints.
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

__all__ = ["ReportData", "ReportPaths", "report_dir", "load_report_data", "build_report", "write_report", "write_report_files", "render_tables"]


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


@dataclass(frozen=True, slots=True)
class ReportPaths:
    directory: Path
    markdown: Path
    json: Path
    table_csv: Path
    pairs_csv: Path
    figures: list[Path] = field(default_factory=list)


async def load_report_data(store: Store, snapshot_id: str, *, seed: int = 0) -> ReportData:
    from clkt.snapshots.ids import stable_qid
    from storage.gpu_jobs import jobs_for_snapshot, results_for_snapshot
    from storage.models import Snapshot

    async with store.session() as s:
        snap = await s.get(Snapshot, snapshot_id)
        if snap is None:
            from clkt.errors import UserError

            raise UserError(f"no snapshot {snapshot_id!r} in the store")
        jobs = await jobs_for_snapshot(s, snapshot_id)
        rows = await results_for_snapshot(s, snapshot_id)
        manifest = dict(snap.manifest or {})
    infos = [
        JobInfo(
            job_id=j.id or 0, model=j.target_model, strategy=j.strategy, train_lang=j.train_lang, status=str(getattr(j.status, "value", j.status)),
            best_epoch=j.best_epoch, error=j.last_error, family=(j.summary or {}).get("target_family"),
            size_b=(j.summary or {}).get("target_size_b"),
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


def build_report(snapshot_id: str, languages: list[str], jobs: list[JobInfo], outcomes: list[Outcome], seed: int = 0) -> ReportData:
    notes: list[str] = []
    failed = [j for j in jobs if j.status == "failed"]
    if failed:
        notes.append(f"{len(failed)} job(s) failed: " + "; ".join(f"{j.model}/{j.strategy}/{j.train_lang}: {(j.error or '')[:160]}" for j in failed))
    base = base_accuracy(outcomes)
    for b in base:
        if b.flagged:
            notes.append(
                f"base model {b.model} answers {b.lang} at {100 * (b.accuracy or 0):.0f}% ({b.scorer}, n={b.n}), far above "
                "chance (25%): these entities may not be unseen by it"
            )
    pf = [{"model": m, "strategy": s, "variant": v, "rate": r} for (m, s, v), r in parse_failure_rates(outcomes).items()]
    data = ReportData(
        snapshot_id=snapshot_id, languages=languages, jobs=jobs, table2=summarize(outcomes, languages, seed=seed),
        pairs=pair_metrics(outcomes, languages), asymmetry=mcnemar_tests(outcomes, languages), base=base,
        parse_failures=pf, notes=notes,
    )
    missing = [p for p in data.pairs if p.missing and p.domain == ALL_DOMAINS]
    if missing:
        data.notes.append(
            "missing pairs (no questions answered in a language): "
            + ", ".join(sorted({f"{p.train_lang}->{p.test_lang}" for p in missing}))
        )
    return data


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
        w.writerow(["model", "strategy", "scorer", "domain", "train_lang", "test_lang", "A", "B", "C", "D", "overall", "transfer", "missing"])
        for p in data.pairs:
            t = p.table
            w.writerow([p.model, p.strategy, p.scorer, p.domain, p.train_lang, p.test_lang, t.a, t.b, t.c, t.d,
                        _pct(p.overall), "undefined" if (p.transfer is None and not p.missing) else _pct(p.transfer), p.missing])
    json_path = out / "metrics.json"
    json_path.write_text(json.dumps(data.model_dump(mode="json"), ensure_ascii=False, indent=1), encoding="utf-8")
    figures = _heatmaps(data, out) + _size_plots(data, out)
    md = out / "report.md"
    md.write_text(_markdown(data, figures), encoding="utf-8")
    return ReportPaths(directory=out, markdown=md, json=json_path, table_csv=table_csv, pairs_csv=pairs_csv, figures=figures)


def _heatmaps(data: ReportData, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    langs = data.languages
    groups: dict[tuple[str, str, str], dict[tuple[str, str], PairMetrics]] = defaultdict(dict)
    for p in data.pairs:
        if p.domain == ALL_DOMAINS:
            groups[(p.model, p.strategy, p.scorer)][(p.train_lang, p.test_lang)] = p
    paths: list[Path] = []
    for (model, strategy, scorer), cells in sorted(groups.items()):
        m = np.full((len(langs), len(langs)), np.nan)
        for (lt, ls), p in cells.items():
            if p.transfer is not None:
                m[langs.index(lt), langs.index(ls)] = 100 * p.transfer
        fig, ax = plt.subplots(figsize=(1.1 * len(langs) + 2, 1.0 * len(langs) + 1.5))
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e6e6e6")
        im = ax.imshow(np.ma.masked_invalid(m), vmin=0, vmax=100, cmap=cmap)
        ax.set_xticks(range(len(langs)), langs)
        ax.set_yticks(range(len(langs)), langs)
        ax.set_xlabel("test language")
        ax.set_ylabel("train language")
        for i, lt in enumerate(langs):
            for j, ls in enumerate(langs):
                p = cells.get((lt, ls))
                txt = "—" if i == j else ("missing" if p is None or p.missing else ("undef." if p.transfer is None else f"{m[i, j]:.0f}"))
                ax.text(j, i, txt, ha="center", va="center", color="black" if np.isnan(m[i, j]) or m[i, j] >= 60 else "white", fontsize=8)
        ax.set_title(f"Transfer (%) — {model}\n{strategy}, {scorer}", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
        path = out / f"heatmap-{_slug(model)}-{_slug(strategy)}-{_slug(scorer)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def _size_plots(data: ReportData, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = {j.model: (j.family, j.size_b) for j in data.jobs if j.family and j.size_b}
    families: dict[str, list[str]] = defaultdict(list)
    for model, (fam, _) in sizes.items():
        families[str(fam)].append(model)
    paths: list[Path] = []
    for fam, models in sorted(families.items()):
        if len(models) < 2:
            continue
        cells = [c for c in data.table2 if c.model in models]
        for strategy, scorer in sorted({(c.strategy, c.scorer) for c in cells}):
            if len({sizes[c.model][1] for c in cells if c.strategy == strategy and c.scorer == scorer}) < 2:
                continue
            fig, axes = plt.subplots(1, 2, figsize=(10, 4))
            for ax, metric in zip(axes, ("overall", "transfer"), strict=True):
                for dom in sorted({c.domain for c in cells} - {ALL_DOMAINS}):
                    pts = sorted(
                        (sizes[c.model][1], getattr(c, f"{metric}_mean"))
                        for c in cells
                        if c.domain == dom and c.strategy == strategy and c.scorer == scorer and getattr(c, f"{metric}_mean") is not None
                    )
                    if pts:
                        ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=dom)
                ax.set_xscale("log")
                ax.set_xlabel("parameters (B)")
                ax.set_ylabel(f"{metric} (%)")
                ax.set_title(f"{fam}: {metric}")
                ax.legend(fontsize=7)
            fig.tight_layout()
            path = out / f"size-{_slug(fam)}-{_slug(strategy)}-{_slug(scorer)}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    return paths


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
        row += [fmt(by[d].overall_mean, by[d].overall_std) if d in by else "missing" for d in doms]
        row += [
            (fmt(by[d].transfer_mean, by[d].transfer_std) if by[d].transfer_mean is not None else "undefined") if d in by else "missing"
            for d in doms
        ]
        rows.append(row)
    return header, rows


def render_tables(data: ReportData) -> list[Table]:
    from rich.table import Table

    tables: list[Table] = []
    for title, label, _, cells in _scenarios(data):
        header, rows = _grid(data, label, cells)
        t = Table(*header, title=f"{title} (mean ± std over language pairs, %)")
        for r in rows:
            t.add_row(*r)
        tables.append(t)
    if data.base:
        t = Table("model", "scorer", *data.languages, title="Base model accuracy per language (chance = 25%)")
        by: dict[tuple[str, str], dict[str, BaseAccuracy]] = defaultdict(dict)
        for b in data.base:
            by[(b.model, b.scorer)][b.lang] = b
        for (model, scorer), langs in sorted(by.items()):
            t.add_row(model, scorer, *[
                ("missing" if lang not in langs else f"{100 * (langs[lang].accuracy or 0):.1f}{' !' if langs[lang].flagged else ''}")
                for lang in data.languages
            ])
        tables.append(t)
    return tables


def _markdown(data: ReportData, figures: list[Path]) -> str:
    lines = [f"# LiveCLKTBench report — snapshot `{data.snapshot_id}`", ""]
    done = sum(j.status == "done" for j in data.jobs)
    lines += [f"Languages: {', '.join(data.languages)}. Jobs: {done} done of {len(data.jobs)}.", ""]
    lines += [
        "Overall = A/(A+B+C+D), Transfer = A/(A+B) per ordered pair (L_train ≠ L_test); cells are mean ± std over "
        "pairs, in %. *undefined*: no pair had a question right in the train language (A+B = 0).", "",
    ]
    for note in data.notes:
        lines.append(f"> **Note:** {note}")
    if data.notes:
        lines.append("")
    for title, label, _, cells in _scenarios(data):
        header, rows = _grid(data, label, cells)
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    if data.base:
        lines += ["## Base model accuracy (test split)", "", "| model | scorer | lang | n | accuracy | flagged |", "|---|---|---|---|---|---|"]
        for b in data.base:
            lines.append(f"| {b.model} | {b.scorer} | {b.lang} | {b.n} | {_pct(b.accuracy)} | {'yes' if b.flagged else ''} |")
        lines.append("")
    if data.asymmetry:
        lines += ["## Directional asymmetry (exact McNemar)", "", "| model | strategy | scorer | pair | L1→L2 only | L2→L1 only | p | stronger |",
                  "|---|---|---|---|---|---|---|---|"]
        for a in data.asymmetry:
            p = "n/a" if a.p_value is None else f"{a.p_value:.3g}"
            lines.append(f"| {a.model} | {a.strategy} | {a.scorer} | {a.lang_1}–{a.lang_2} | {a.forward} | {a.backward} | {p} | {a.stronger or '='} |")
        lines.append("")
    if data.parse_failures:
        lines += ["## Parse failures of `generate`", ""]
        lines += [f"- {p['model']} / {p['strategy']} / {p['variant']}: {100 * p['rate']:.1f}%" for p in data.parse_failures]
        lines.append("")
    if figures:
        lines += ["## Figures", ""]
        lines += [f"![{f.stem}]({f.name})" for f in figures]
        lines.append("")
    lines += ["Files: `table2.csv`, `pairs.csv`, `metrics.json`.", ""]
    return "\n".join(lines)
