"""A pack's `metrics.json`, computed from its predictions alone (and again by `clkt submit`, which trusts only that).

Per scorer: the accuracy of each variant per train language and test language, Learn per train language (base
against injected on the train language's questions, `clkt.report.learn`), and every ordered language pair's
contingency with each metric of `clkt.report.metric_table.PAIR_METRICS` (Overall, Transfer, ...), plus their mean
over the pairs, every domain pooled (`clkt.report.metrics.pair_metrics`). No bootstrap: the numbers are exact
functions of the predictions, so two computations compare equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from clkt.evaluate.summary import LearnSummary
from clkt.packs.format import PredictionRow
from clkt.report.learn import learn_stat
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS, Outcome, pair_metrics

__all__ = ["Accuracy", "PackMetrics", "PairRow", "ScorerMetrics", "compute_metrics", "first_difference"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Accuracy(_Model):
    train_lang: str
    variant: str
    lang: str
    n: int
    correct: int
    accuracy: float | None


class PairRow(_Model):
    train_lang: str
    test_lang: str
    a: int
    b: int
    c: int
    d: int
    values: dict[str, float | None]  # metric key -> value (None: undefined)


class ScorerMetrics(_Model):
    accuracy: list[Accuracy]
    learn: dict[str, LearnSummary]  # train language -> Learn
    pairs: list[PairRow]
    means: dict[str, float | None]  # metric key -> mean over the pairs where it is defined


class PackMetrics(_Model):
    format_version: int
    scorers: dict[str, ScorerMetrics] = Field(default_factory=dict)


def _accuracy(rows: Sequence[PredictionRow]) -> list[Accuracy]:
    cells: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        c = cells.setdefault((r.train_lang, r.variant, r.lang), [0, 0])
        c[0] += 1
        c[1] += r.correct
    return [
        Accuracy(train_lang=t, variant=v, lang=lang, n=n, correct=k, accuracy=k / n if n else None)
        for (t, v, lang), (n, k) in sorted(cells.items())
    ]


def _learn(rows: Sequence[PredictionRow]) -> dict[str, LearnSummary]:
    out: dict[str, LearnSummary] = {}
    for train in sorted({r.train_lang for r in rows}):
        sel = [r for r in rows if r.train_lang == train and r.lang == train]
        base = {r.qid: r.correct for r in sel if r.variant == "base"}
        inj = {r.qid: r.correct for r in sel if r.variant == "injected"}
        common = sorted(set(base) & set(inj))
        if common:
            out[train] = learn_stat((base[q], inj[q]) for q in common).to_summary()
    return out


def _pairs(rows: Sequence[PredictionRow], languages: Sequence[str]) -> list[PairRow]:
    outcomes = [
        Outcome(model="pack", strategy="pack", scorer=r.scorer, variant=r.variant, train_lang=r.train_lang, lang=r.lang,
                qid=r.qid, domain=r.domain, correct=r.correct, predicted=r.predicted)
        for r in rows
    ]
    return [
        PairRow(train_lang=p.train_lang, test_lang=p.test_lang, a=p.table.a, b=p.table.b, c=p.table.c, d=p.table.d,
                values={m.key: p.metric(m.key) for m in PAIR_METRICS})
        for p in pair_metrics(outcomes, languages) if p.domain == ALL_DOMAINS
    ]


def _means(pairs: Sequence[PairRow]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for m in PAIR_METRICS:
        vals = [v for p in pairs if (v := p.values.get(m.key)) is not None]
        out[m.key] = sum(vals) / len(vals) if vals else None
    return out


def compute_metrics(rows: Iterable[PredictionRow], languages: Sequence[str], *, format_version: int) -> PackMetrics:
    """The metrics of `rows` over the snapshot's `languages` (see the module docstring)."""
    by_scorer: dict[str, list[PredictionRow]] = {}
    for r in rows:
        by_scorer.setdefault(r.scorer, []).append(r)
    scorers: dict[str, ScorerMetrics] = {}
    for scorer, sel in sorted(by_scorer.items()):
        pairs = _pairs(sel, languages)
        scorers[scorer] = ScorerMetrics(accuracy=_accuracy(sel), learn=_learn(sel), pairs=pairs, means=_means(pairs))
    return PackMetrics(format_version=format_version, scorers=scorers)


def first_difference(claimed: object, computed: object, path: str = "") -> str | None:
    """Where two JSON values first differ (`scorers.generate.means.transfer: 0.5 != 0.25`), None when they agree
    (numbers within 1e-9)."""
    if isinstance(claimed, dict) and isinstance(computed, dict):
        for key in sorted(set(claimed) | set(computed), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in claimed or key not in computed:
                return f"{where}: {'missing' if key not in claimed else 'not computed'}"
            diff = first_difference(claimed[key], computed[key], where)
            if diff:
                return diff
        return None
    if isinstance(claimed, list) and isinstance(computed, list):
        if len(claimed) != len(computed):
            return f"{path}: {len(claimed)} entries != {len(computed)}"
        for i, (x, y) in enumerate(zip(claimed, computed, strict=True)):
            diff = first_difference(x, y, f"{path}[{i}]")
            if diff:
                return diff
        return None
    numbers = (int, float)
    if isinstance(claimed, numbers) and isinstance(computed, numbers) and not isinstance(claimed, bool) \
            and not isinstance(computed, bool):
        return None if math.isclose(claimed, computed, rel_tol=1e-9, abs_tol=1e-12) else f"{path}: {claimed} != {computed}"
    return None if claimed == computed else f"{path}: {claimed!r} != {computed!r}"
