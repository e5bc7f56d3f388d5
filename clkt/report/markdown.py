"""`report.md`: a researcher reads what was learned, what transferred and what is too small to say.

Cells come from `clkt.report.writer`; model names and notes may carry crawled text, so every table cell
goes through `_md_row` (no `|`, no newline can break the table).
"""

from __future__ import annotations

from pathlib import Path

from clkt.report.data import COST_NOTE, LEARN_HEADER, ReportData, ci_text, grid, learn_rows, pct1, scenarios
from clkt.report.incontext import incontext_lines
from clkt.report.incontext_open import incontext_open_lines
from clkt.report.locality import KEPT_HEADER, LOCALITY_INTRO, kept_row
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import BASE_FLAG_MEANS
from clkt.report.open_lines import open_lines
from clkt.report.seed_report import SEED_HEADER, seed_lines
from clkt.report.stats import wilson_ci

__all__ = ["markdown"]


def markdown(data: ReportData, figures: list[Path]) -> str:
    lines = [f"# LiveCLKTBench report — snapshot `{data.snapshot_id}`", ""]
    lines += [_header_line(data), ""]
    if data.summary:
        lines += ["## In short", ""] + [f"- {x}" for x in data.summary] + [""]
    lines += [
        "Learn = the train language's accuracy after injection against the base model's on the same questions "
        "(exact McNemar p; a job learned when its gain is positive with p < 0.05). "
        + ", ".join(f"{m.label} = {m.definition}" for m in PAIR_METRICS)
        + " per ordered pair (L_train ≠ L_test); cells are mean ± std over "
        "pairs [95% CI from a bootstrap over entities: the questions of an entity are drawn together], in %; "
        "*all pooled*: the pairs' values on every domain's questions pooled (the figure of the summary above and of "
        "the leaderboard), *mean of domains*: each pair's mean over the domains (the paper's Table 2). *undefined*: "
        "no pair had a question right in the train language (A+B = 0). *not interpretable*: the jobs did not learn, "
        "so A+B is what the base model guessed; such pairs are "
        f"left out of Transfer means (*n.i.* counts them). Heatmap cells with A+B < {data.min_cell_n} are grey.", "",
    ]
    for note in data.notes:
        lines.append(f"> **Note:** {note}")
    if data.notes:
        lines.append("")
    if data.learn:
        lines += ["## Learn (train language, base vs injected)", "",
                  "95% CIs from a bootstrap over entities (the draws of Table 2 and the leaderboard).", "",
                  _md_row(LEARN_HEADER), "|" + "---|" * len(LEARN_HEADER)]
        lines += [_md_row(r) for r in learn_rows(data.learn)]
        lines.append("")
    for title, label, _, cells in scenarios(data):
        header, rows = grid(data, label, cells)
        lines += [f"## {title}", ""] + ([COST_NOTE, ""] if label == "strategy" else [])
        lines += [_md_row(header), "|" + "---|" * len(header)]
        lines += [_md_row(r) for r in rows]
        lines.append("")
    lines += _seeds(data)
    if data.control:
        lines += _control(data)
    if data.locality:
        lines += [*LOCALITY_INTRO, *(_md_row(r) for r in [KEPT_HEADER, ["---"] * len(KEPT_HEADER), *map(kept_row, data.locality)]), ""]
    if data.base:
        lines += ["## Base model accuracy (test split)", "", f"Chance is 25%; {BASE_FLAG_MEANS}. 95% CIs from a bootstrap over entities.", "",
                  "| model | scorer | lang | n | accuracy [95% CI] | flagged |",
                  "|---|---|---|---|---|---|"]
        for b in data.base:
            k = round((b.accuracy or 0) * b.n)
            ci = b.ci if b.ci is not None else wilson_ci(k, b.n)
            lines.append(f"| {b.model} | {b.scorer} | {b.lang} | {b.n} | {pct1(b.accuracy)}{ci_text(ci)} | "
                         f"{'yes' if b.flagged else ''} |")
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
    if data.knowledge:
        lines += _knowledge(data)
    if data.incontext:
        lines += incontext_lines(data.incontext, data.table2)
    if data.incontext_open:
        lines += incontext_open_lines(data.incontext_open)
    if data.open_track is not None:
        lines += open_lines(data.open_track, _md_row)
    if figures:
        lines += ["## Figures", ""]
        lines += [f"![{f.stem}]({f.name})" for f in figures]
        lines.append("")
    lines += ["Files: `table2.csv`, `pairs.csv`, `learn.csv`, `metrics.json`.", ""]
    return "\n".join(lines)


def _control(data: ReportData) -> list[str]:
    """The control split's table: base against injected on the fictional entities, per test language."""
    lines: list[str] = []
    lines += ["## Control split (fictional entities; never in the scores above)", "",
              "Base against injected on the same control questions, per test language (exact McNemar); 95% CIs over "
              "questions (Wilson, and Wald for the gain): a job keeps the control's counts, not its entities.", ""]
    hdr = ["model", "strategy", "scorer", "train", "test", "n", "base % [CI]", "injected % [CI]", "gain pts [CI]", "McNemar p",
           "gained"]
    lines += [_md_row(hdr), "|" + "---|" * len(hdr)]
    for cl in data.control:
        st = cl.stat
        lines.append(_md_row([
            cl.model, cl.strategy, cl.scorer, cl.train_lang, cl.lang, str(st.n), f"{pct1(st.base_accuracy)}{ci_text(st.base_ci)}",
            f"{pct1(st.injected_accuracy)}{ci_text(st.injected_ci)}", f"{100 * (st.gain or 0):+.1f}{ci_text(st.gain_ci)}",
            f"{st.p_value:.3g}", "yes" if st.learned else "no",
        ]))
    lines.append("")
    return lines


def _header_line(data: ReportData) -> str:
    """Languages, the train languages (said plainly when they are a subset), jobs and their best epochs."""
    done = sum(j.status == "done" for j in data.jobs)
    trained = [lang for lang in data.languages if any(j.train_lang == lang for j in data.jobs)]
    text = f"Languages: {', '.join(data.languages)}."
    if trained and len(trained) < len(data.languages):
        text += (f" Train languages: {', '.join(trained)} — a subset: only these were injected; every job is tested "
                 f"in all {len(data.languages)} languages.")
    text += f" Jobs: {done} done of {len(data.jobs)}."
    best = [f"{j.model} / {j.strategy} / {j.train_lang}: {j.best_epoch}"
            + (f" (open answers: {j.open_epoch}, chosen on the open validation questions)" if j.open_epoch is not None
               else "")
            for j in data.jobs if j.best_epoch is not None]
    if best:
        text += f" Best epoch (chosen on the train language's validation questions): {'; '.join(best)}."
    excluded = [t for t in data.targets if t.excluded]
    if excluded:
        text += (" Targets with exclusions (joined after the freeze; entities they recognised, or could not be asked "
                 "about, are left out of their jobs, which ran on the rest): "
                 + "; ".join(f"{t.target}: {t.excluded} of {t.entities} entities excluded, {t.valid} valid"
                             for t in excluded) + ".")
    elif data.targets:
        text += f" No target had exclusions: every job ran on all {max(t.entities for t in data.targets)} entities."
    return text


def _md_row(cells: list[str]) -> str:
    """A Markdown table row; crawled text (model names, notes) cannot break the table or inject markup."""
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _knowledge(data: ReportData) -> list[str]:
    """What the probe verdicts say each target of the report knew, by month of occurrence (only with verdicts)."""
    from clkt.report.cutoff_curve import RULE

    lines = ["## Knowledge cutoff (probe verdicts by month of occurrence)", "", RULE, ""]
    for k in data.knowledge:
        lines.append(f"- {'**ALARM** ' if k.alarm else ''}{k.summary}".replace("|", "\\|").replace("\n", " "))
    lines.append("")
    hdr = ["target", "month", "asked", "known", "known-rate % [CI]", "window", "vs floor"]
    lines += [_md_row(hdr), "|" + "---|" * len(hdr)]
    for k in data.knowledge:
        for m in k.months:
            vs = ("floor" if m.floor_month else "not tested" if m.p_value is None
                  else f"above (p={m.p_value:.2g})" if m.above_floor else "at floor")
            lines.append(_md_row([k.target, m.month, str(m.asked), str(m.known), f"{pct1(m.rate)}{ci_text(m.ci)}",
                                  "inside" if m.in_window else "before", vs]))
    lines.append("")
    return lines


def _seeds(data: ReportData) -> list[str]:
    """*Training seeds*: how far the seeds of the groups run with several seeds spread (none: no section); their
    pooled figures are Table 2's."""
    if not data.seeds:
        return []
    lines = ["## Training seeds", "",
             "The groups whose jobs ran with several training seeds: Table 2's cells above already pool them (the mean "
             "over seeds; the 95% CI is the bootstrap interval over entities of that mean, each side widened in "
             "quadrature by the between-seed term t(k-1) × sd/√k for k seeds: the leaderboard's figure). Here, how far "
             "the seeds spread: each seed's value (Transfer over the pairs whose train language learned on every "
             "seed's paired answers together, the same pairs in every seed) and the between-seed sd.", "",
             _md_row(SEED_HEADER), "|" + "---|" * len(SEED_HEADER)]
    lines += [_md_row(r) for r in seed_lines(data.seeds)]
    lines.append("")
    return lines
