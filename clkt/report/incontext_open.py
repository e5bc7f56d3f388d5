"""The report's in-context short answers (`clkt.incontext.open_track`): contextual open figures, reported apart.

Per target:

- per (document language, test language), the share of short answers the normaliser grades CORRECT, with n, the
  entities and a 95% interval from the bootstrap over entities (the leaderboard's draws);
- per ordered pair (document language c, test language L ≠ c), the contingency A/B/C/D of the same question (right
  in L with the c document? right in c with it?), built by the in-context multiple-choice section's own builder
  (`clkt.report.incontext.context_pairs`), with Overall and Transfer (`PAIR_METRICS`), their n (the metric's
  denominator) and a 95% interval from the same draws;
- Overall and Transfer as means over the pairs (every pair with a value, as the multiple-choice section), their
  interval from the bootstrap of the mean, their n summed over those pairs.

Where the daemon's jury of LLM judges graded them, each cell shows the jury's figure beside the normaliser's
(`clkt.report.incontext_open_jury`: n, interval, too few, pending answers counted and in no figure), with the jury's
cost and prompt version per target.

A figure on fewer than `MIN_CELL_N` answers (a pair: its metric's denominator) or about one entity is *too few*
(its counts shown, no value: `clkt.report.metric_table.open_too_few`, the rule of every open-answer cell). Answers
in another language are INCORRECT and counted apart; UNSCORABLE and skipped prompts are in no figure (counted).
These figures are never pooled with the in-context multiple-choice ones
(`clkt.report.incontext`) nor with the parametric open track (`clkt.report.open_track`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clkt.report._metric_fields import MetricSummary
from clkt.report.basics import BOOTSTRAP_SAMPLES, Contingency, ci1_text
from clkt.report.clustered import EntityDraws, accuracy_interval, entity_draws
from clkt.report.incontext import ContextPairs, PairAnswer, context_pairs
from clkt.report.incontext_open_jury import InContextJuryCell, JuryKey, jury_by_key, jury_cell, jury_cell_text
from clkt.report.metric_table import (
    CELLS,
    MIN_CELL_N,
    OVERALL,
    TRANSFER,
    PairMetric,
    cell_sum,
    open_too_few,
)
from clkt.report.pooled import percentile_ci
from storage.incontext import NO_CONTEXT
from storage.incontext_open import InContextOpenRecord
from storage.incontext_open_judgements import InContextJuryRow

__all__ = ["INCONTEXT_OPEN_TITLE", "InContextOpenCell", "InContextOpenFigure", "InContextOpenPair",
           "InContextOpenTarget", "incontext_open_lines", "incontext_open_results"]

INCONTEXT_OPEN_TITLE = "In-context short answers (contextual, not pooled with any other figure)"
_GRADED = frozenset({"CORRECT", "INCORRECT", "NOT_ATTEMPTED"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class InContextOpenCell(_Frozen):
    context_lang: str  # "" = no document (the floor)
    lang: str
    n: int  # graded answers
    entities: int
    correct: int
    other_language: int
    not_attempted: int
    too_few: bool
    accuracy: float | None  # None when too few
    ci: tuple[float, float] | None = None
    # the jury's figure on the same answers (None: it graded none of the target's; then absent from metrics.json)
    jury: InContextJuryCell | None = Field(default=None, exclude_if=lambda v: v is None)


class InContextOpenFigure(_Frozen):
    """Overall or Transfer of a pair, or its mean over a target's pairs."""

    value: float | None  # None unless `reading` is ok
    ci: tuple[float, float] | None = None  # 95%, from the bootstrap over entities
    std: float | None = None  # over the pairs (a target's mean only)
    pairs: int | None = None  # the pairs with a value, the mean is over (a target's mean only)
    n: int = 0  # what it rests on: the metric's denominator (a mean: summed over the pairs with a value)
    reading: str = "missing"  # ok | too few | undefined (denominator 0) | missing (no question answered in both)


class InContextOpenPair(_Frozen):
    """An ordered pair (document language c, test language L ≠ c): the c- and L-questions answered with the c
    document, paired question by question."""

    context_lang: str
    test_lang: str
    table: Contingency
    entities: int
    other_language: int  # of the pair's 2 x (A+B+C+D) answers, those in another language (INCORRECT)
    overall: InContextOpenFigure
    transfer: InContextOpenFigure


class InContextOpenTarget(_Frozen):
    target: str
    cells: list[InContextOpenCell]
    pairs: list[InContextOpenPair] = []
    overall: InContextOpenFigure = InContextOpenFigure(value=None)  # mean over the pairs
    transfer: InContextOpenFigure = InContextOpenFigure(value=None)
    answered: int
    skipped: int
    unscorable: int
    truncated: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    prompt_versions: list[str]
    # what the jury's calls on the target's answers cost, its prompt's versions (empty: it graded none; both absent)
    jury_cost_usd: float = Field(default=0.0, exclude_if=lambda v: not v)
    jury_prompt_versions: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)


def _cells(graded: Sequence[InContextOpenRecord], draws: EntityDraws,
           jury: dict[JuryKey, InContextJuryRow]) -> list[InContextOpenCell]:
    by: dict[tuple[str, str], list[InContextOpenRecord]] = defaultdict(list)
    for r in graded:
        by[(r.context_lang, r.lang)].append(r)
    out: list[InContextOpenCell] = []
    for (c, lang), rs in sorted(by.items()):
        k, ents = sum(r.correct for r in rs), len({r.entity_id for r in rs})
        few = open_too_few(n=len(rs), entities=ents)
        out.append(InContextOpenCell(
            context_lang=c, lang=lang, n=len(rs), entities=ents, correct=k,
            other_language=sum(r.other_language for r in rs), not_attempted=sum(r.verdict == "NOT_ATTEMPTED" for r in rs),
            too_few=few, accuracy=None if few else k / len(rs),
            ci=None if few else accuracy_interval([(r.correct, r.entity_id) for r in rs], draws),
            jury=jury_cell(rs, jury, draws) if jury else None,
        ))
    return out


def _pair_figure(m: PairMetric, table: Contingency, entities: int, per_draw: np.ndarray) -> InContextOpenFigure:
    reading = m.reading(table, learned=None)  # missing, undefined, too few (Transfer under MIN_CELL_N) or ok
    if reading == "ok" and open_too_few(n=m.n(table), entities=entities):
        reading = "too few"
    ok = reading == "ok"
    return InContextOpenFigure(value=m.value(table) if ok else None, n=m.n(table), reading=reading,
                               ci=percentile_ci(per_draw) if ok and per_draw.size else None)


def _mean_figure(m: PairMetric, summary: MetricSummary, cp: ContextPairs) -> InContextOpenFigure:
    over = [(p.table, e) for p, e in zip(cp.pairs, cp.entities, strict=True) if m.value(p.table) is not None]
    n, entities = sum(m.n(t) for t, _ in over), len(frozenset().union(*(e for _, e in over)))
    if summary.mean is None:
        reading = "undefined" if any(cell_sum(CELLS, p.table) for p in cp.pairs) else "missing"
    else:
        reading = "too few" if open_too_few(n=n, entities=entities) else "ok"
    ok = reading == "ok"
    return InContextOpenFigure(value=summary.mean if ok else None, ci=summary.ci if ok else None,
                               std=summary.std if ok else None, n=n, reading=reading, pairs=len(over))


def _pairs(graded: Sequence[InContextOpenRecord], cp: ContextPairs) -> list[InContextOpenPair]:
    other: dict[tuple[str, str], dict[int, bool]] = defaultdict(dict)  # (c, lang) -> qid -> in another language
    for r in graded:
        other[(r.context_lang, r.lang)][r.open_qid] = r.other_language
    out: list[InContextOpenPair] = []
    for i, (p, ent_set) in enumerate(zip(cp.pairs, cp.entities, strict=True)):
        ents = len(ent_set)
        x, y = other[(p.context_lang, p.context_lang)], other[(p.context_lang, p.test_lang)]
        both = set(x) & set(y)
        out.append(InContextOpenPair(
            context_lang=p.context_lang, test_lang=p.test_lang, table=p.table, entities=ents,
            other_language=sum(x[q] + y[q] for q in both),
            overall=_pair_figure(OVERALL, p.table, ents, cp.per_draw[OVERALL.key][:, i]),
            transfer=_pair_figure(TRANSFER, p.table, ents, cp.per_draw[TRANSFER.key][:, i]),
        ))
    return out


def _target(t: str, rs: Sequence[InContextOpenRecord], jury: Sequence[InContextJuryRow], *, languages: Sequence[str],
            snapshot_id: str, seed: int) -> InContextOpenTarget:
    graded = [r for r in rs if r.verdict in _GRADED]
    draws = entity_draws([r.entity_id for r in graded], snapshot_id=snapshot_id, seed=seed, samples=BOOTSTRAP_SAMPLES)
    cp = context_pairs([PairAnswer(r.context_lang, r.lang, r.open_qid, r.entity_id, r.correct)
                        for r in graded if r.context_lang != NO_CONTEXT], languages=languages, draws=draws)
    return InContextOpenTarget(
        target=t, cells=_cells(graded, draws, jury_by_key(jury)), pairs=_pairs(graded, cp),
        overall=_mean_figure(OVERALL, cp.overall, cp), transfer=_mean_figure(TRANSFER, cp.transfer, cp),
        answered=sum(r.status == "answered" for r in rs), skipped=sum(r.status == "skipped" for r in rs),
        unscorable=sum(r.verdict == "UNSCORABLE" for r in rs), truncated=sum(r.truncated for r in rs),
        input_tokens=sum(r.input_tokens for r in rs), output_tokens=sum(r.output_tokens for r in rs),
        cost_usd=round(sum(r.cost_usd for r in rs), 6), prompt_versions=sorted({r.prompt_version for r in rs}),
        jury_cost_usd=round(sum(j.cost_usd for j in jury), 6), jury_prompt_versions=sorted({j.prompt_version for j in jury}),
    )


def incontext_open_results(
    rows: Sequence[InContextOpenRecord], *, languages: Sequence[str], snapshot_id: str, seed: int = 0,
    jury: Sequence[InContextJuryRow] = (),
) -> list[InContextOpenTarget]:
    """The short answers' figures per target (in name order) from its stored rows on one snapshot; `languages`: the
    snapshot's, in order (the pairs' order); `jury`: the jury's stored verdicts of them (the jury's figure per cell)."""
    by: dict[str, list[InContextOpenRecord]] = defaultdict(list)
    for r in rows:
        by[r.target].append(r)
    verdicts: dict[str, list[InContextJuryRow]] = defaultdict(list)
    for j in jury:
        verdicts[j.target].append(j)
    return [_target(t, rs, verdicts[t], languages=languages, snapshot_id=snapshot_id, seed=seed)
            for t, rs in sorted(by.items())]


def _cell(c: InContextOpenCell) -> str:
    return "too few" if c.accuracy is None else f"{100 * c.accuracy:.1f}{ci1_text(c.ci)}"


def _figure(f: InContextOpenFigure) -> str:
    """`62.5 [40.0, 80.0] (n 16)`; a figure without a value says why (`too few (n 4)`, `undefined`, `–`); a mean
    adds its std over the pairs and how many (`50.0 ± 40.8 [...] (n 28, 3 pairs)`)."""
    n = f"n {f.n}" if f.pairs is None else f"n {f.n}, {f.pairs} pairs"
    if f.value is None:
        return {"missing": "–", "undefined": "undefined"}.get(f.reading, f"{f.reading} ({n})")
    std = "" if f.std is None else f" ± {100 * f.std:.1f}"
    return f"{100 * f.value:.1f}{std}{ci1_text(f.ci)} ({n})"


def _pair_lines(t: InContextOpenTarget) -> list[str]:
    if not t.pairs:
        return []
    return [
        f"{OVERALL.label} {_figure(t.overall)}, {TRANSFER.label} {_figure(t.transfer)}: mean ± std over the "
        f"ordered pairs with a value (of {len(t.pairs)}) [95% CI].", "",
        f"| document c | question L | A | B | C | D | entities | {OVERALL.label} % [95% CI] (n) "
        f"| {TRANSFER.label} % [95% CI] (n) | answers in another language |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {p.context_lang} | {p.test_lang} | {p.table.a} | {p.table.b} | {p.table.c} | {p.table.d} | {p.entities} "
          f"| {_figure(p.overall)} | {_figure(p.transfer)} | {p.other_language} |" for p in t.pairs),
        "",
    ]


def _jury_intro(t: InContextOpenTarget) -> list[str]:
    cells = [c.jury for c in t.cells if c.jury is not None]
    graded, pending = sum(j.n for j in cells), sum(j.pending for j in cells)
    undecided = sum(j.undecided for j in cells)
    return [f"The jury of LLM judges (layer `open-jury`, apart from the normaliser) on the same answers: {graded} "
            f"graded ({undecided} undecided: not right), {pending} not yet (pending: in no figure); the jury's cost USD "
            f"{t.jury_cost_usd:.4f}; prompt {', '.join(t.jury_prompt_versions)}.", ""]


def incontext_open_lines(targets: Sequence[InContextOpenTarget]) -> list[str]:
    """The report.md section: per target, its totals, one row per (document, question language), then its pairs'
    contingencies with Overall and Transfer and their means."""
    lines = [
        f"## {INCONTEXT_OPEN_TITLE}", "",
        "The entity's document in the document language is in the prompt as delimited data, the short-answer question "
        "in the test language; the answer (greedy, one line) is graded by the normaliser against the gold and its "
        "aliases; an answer in another language is wrong and counted apart. % right [95% CI from a bootstrap over "
        "entities]. Per ordered pair (document language c, question language L ≠ c), the contingency of each question "
        "answered in c and in L with the c document (A right in both, B in c only, C in L only, D in neither), "
        f"{OVERALL.label} = {OVERALL.definition} and {TRANSFER.label} = {TRANSFER.definition} [95% CI] (n: the "
        "denominator); their means ± std over every pair with a value (too-few pairs included), as in the in-context "
        "multiple-choice section. Under "
        f"{MIN_CELL_N} answers (a pair's figure: its denominator) or one entity: *too few*. Unscorable answers and "
        "skipped prompts are in no figure. Never pooled with the in-context multiple-choice figures above nor with "
        "the parametric open track.", "",
    ]
    for t in targets:
        jury = bool(t.jury_prompt_versions)
        lines += [
            f"### {t.target}: short answers by document and question language", "",
            f"{t.answered} answered, {t.skipped} skipped (cannot fit), {t.unscorable} unscorable (in no figure), "
            f"{t.truncated} with the document cut; tokens {t.input_tokens} / {t.output_tokens}, cost USD "
            f"{t.cost_usd:.4f}; prompt {', '.join(t.prompt_versions)}.", "",
            *(_jury_intro(t) if jury else []),
            "| document | question | n | entities | right % [95% CI] | other language | not attempted |"
            + (" jury right % [95% CI] (n) |" if jury else ""),
            "|---|---|---|---|---|---|---|" + ("---|" if jury else ""),
        ]
        lines += [f"| {c.context_lang or 'none (floor)'} | {c.lang} | {c.n} | {c.entities} | {_cell(c)} "
                  f"| {c.other_language} | {c.not_attempted} |" + (f" {jury_cell_text(c.jury)} |" if jury else "")
                  for c in t.cells]
        lines.append("")
        lines += _pair_lines(t)
    return lines
