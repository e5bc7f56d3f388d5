"""The report's in-context short answers (`clkt.incontext.open_track`): contextual open figures, reported apart.

Per target: per (document language, test language), the share of short answers the normaliser grades CORRECT, with
n, the entities and a 95% interval from the bootstrap over entities (the leaderboard's draws); under `MIN_CELL_N`
answers, or one entity, the cell is *too few* (its counts shown, no rate: `clkt.report.metric_table.open_too_few`,
the rule of every open-answer cell). Answers in another language are INCORRECT and counted apart; UNSCORABLE and
skipped prompts are in no figure (counted). These figures are never pooled with the in-context multiple-choice ones
(`clkt.report.incontext`) nor with the parametric open track (`clkt.report.open_track`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.clustered import accuracy_interval, entity_draws
from clkt.report.metric_table import MIN_CELL_N, open_too_few
from storage.incontext_open import InContextOpenRecord

__all__ = ["INCONTEXT_OPEN_TITLE", "InContextOpenCell", "InContextOpenTarget", "incontext_open_lines",
           "incontext_open_results"]

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


class InContextOpenTarget(_Frozen):
    target: str
    cells: list[InContextOpenCell]
    answered: int
    skipped: int
    unscorable: int
    truncated: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    prompt_versions: list[str]


def _cells(graded: Sequence[InContextOpenRecord], *, snapshot_id: str, seed: int) -> list[InContextOpenCell]:
    draws = entity_draws([r.entity_id for r in graded], snapshot_id=snapshot_id, seed=seed, samples=BOOTSTRAP_SAMPLES)
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
        ))
    return out


def incontext_open_results(
    rows: Sequence[InContextOpenRecord], *, snapshot_id: str, seed: int = 0,
) -> list[InContextOpenTarget]:
    """The short answers' figures per target (in name order) from its stored rows on one snapshot."""
    by: dict[str, list[InContextOpenRecord]] = defaultdict(list)
    for r in rows:
        by[r.target].append(r)
    return [
        InContextOpenTarget(
            target=t, cells=_cells([r for r in rs if r.verdict in _GRADED], snapshot_id=snapshot_id, seed=seed),
            answered=sum(r.status == "answered" for r in rs), skipped=sum(r.status == "skipped" for r in rs),
            unscorable=sum(r.verdict == "UNSCORABLE" for r in rs), truncated=sum(r.truncated for r in rs),
            input_tokens=sum(r.input_tokens for r in rs), output_tokens=sum(r.output_tokens for r in rs),
            cost_usd=round(sum(r.cost_usd for r in rs), 6), prompt_versions=sorted({r.prompt_version for r in rs}),
        )
        for t, rs in sorted(by.items())
    ]


def _cell(c: InContextOpenCell) -> str:
    if c.accuracy is None:
        return "too few"
    ci = "" if c.ci is None else f" [{100 * c.ci[0]:.1f}, {100 * c.ci[1]:.1f}]"
    return f"{100 * c.accuracy:.1f}{ci}"


def incontext_open_lines(targets: Sequence[InContextOpenTarget]) -> list[str]:
    """The report.md section: per target, its totals, then one row per (document, question language)."""
    lines = [
        f"## {INCONTEXT_OPEN_TITLE}", "",
        "The entity's document in the document language is in the prompt as delimited data, the short-answer question "
        "in the test language; the answer (greedy, one line) is graded by the normaliser against the gold and its "
        "aliases; an answer in another language is wrong and counted apart. % right [95% CI from a bootstrap over "
        f"entities]; under {MIN_CELL_N} answers or one entity: *too few*. Never pooled with the in-context "
        "multiple-choice figures above nor with the parametric open track.", "",
    ]
    for t in targets:
        lines += [
            f"### {t.target}: short answers by document and question language", "",
            f"{t.answered} answered, {t.skipped} skipped (cannot fit), {t.unscorable} unscorable (in no figure), "
            f"{t.truncated} with the document cut; tokens {t.input_tokens} / {t.output_tokens}, cost USD "
            f"{t.cost_usd:.4f}; prompt {', '.join(t.prompt_versions)}.", "",
            "| document | question | n | entities | right % [95% CI] | other language | not attempted |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [f"| {c.context_lang or 'none (floor)'} | {c.lang} | {c.n} | {c.entities} | {_cell(c)} "
                  f"| {c.other_language} | {c.not_attempted} |" for c in t.cells]
        lines.append("")
    return lines
