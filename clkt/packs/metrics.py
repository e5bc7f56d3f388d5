"""A pack's `metrics.json`, computed from its predictions alone (and again by `clkt submit`, which trusts only that).

Per scorer: the accuracy of each variant per train language and test language, Learn per train language (base
against injected on the train language's questions, `clkt.report.learn`), and every ordered language pair's
contingency with each metric of `clkt.report.metric_table.PAIR_METRICS` (Overall, Transfer, ...), plus their mean
over the pairs, every domain pooled (`clkt.report.metrics.pair_metrics`); Transfer's mean leaves out the pairs whose
train language did not learn, as the report's and the leaderboard's do (one rule, `clkt.report.metric_table`): a
pack's Transfer is the report's for the same letters. With locality answers
(`locality.jsonl`), per scorer `locality`: kept % per train language and test language (of the locality questions
the base model answered right, the share the injected model still answers right), with its counts and a 95%
interval from the report's bootstrap over entities (`clkt.report.locality.kept_figure`: seeded by the snapshot's
id and `KEPT_SEED`, so a job's cell in the snapshot's report and the same answers' cell here are one number);
left out when there are none. With open answers (format version 2), `open`: the open track's figures, apart from
every MCQ scorer's (never pooled): per train language, variant, split and test language the accuracy by the
normaliser layer with its n, entities and 95% interval over entities (under `MIN_CELL_N` answers or about one entity
`too_few`: the counts, no rate; `clkt.report.metric_table.open_too_few`), and the answers in another language
(INCORRECT, counted apart) and unscorable ones (in no figure); and `figures`, the test split's Learn, contingency,
Overall and Transfer computed exactly as a scorer's above (`clkt.packs.open_metrics`). Every number is a function of the answers (the bootstrap is
seeded), so two computations compare equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from clkt.evaluate.locality import locality_counts
from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.summary import LearnSummary
from clkt.packs.format import LocalityRow, PredictionRow
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.learn import learn_stat
from clkt.report.locality import MIN_KEPT_N, KeptFigure, kept_figure
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS, Outcome, pair_metrics
from clkt.report.probed import ProbeVerdicts

__all__ = [
    "KEPT_SEED", "Accuracy", "KeptCell", "OpenCell", "OpenMetrics", "PackMetrics", "PairRow", "ProbeVerdicts", "ScorerMetrics", "compute_metrics",
    "first_difference", "kept_cells",
]

KEPT_SEED = 0  # the report's bootstrap seed (`clkt report`, `clkt.report.writer`): the same draws, the same interval


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


class KeptCell(KeptFigure):
    """Kept % of the locality answers of one train language's job in one test language: `n` questions answered
    by both models, `right_before` = kept + lost (kept %'s denominator), `rate` = kept / right_before (None: nothing
    right before), `ci` its 95% interval over `entities`, `too_few` under `MIN_KEPT_N` right before."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    train_lang: str
    lang: str
    right_before: int


class ScorerMetrics(_Model):
    accuracy: list[Accuracy]
    learn: dict[str, LearnSummary]  # train language -> Learn
    pairs: list[PairRow]
    means: dict[str, float | None]  # metric key -> mean over the pairs where it is defined
    # kept % per train language x test language (the locality answers); left out when the pack has none
    locality: list[KeptCell] = Field(default_factory=list, exclude_if=lambda v: not v)


class OpenCell(_Model):
    """The open answers of one train language's job by one variant in one split and test language, as scored by the
    normaliser layer: `correct` of `n` graded answers about `entities` entities, `accuracy` their share and `ci` its
    95% interval over the entities, `other_language` of them answered in another language (INCORRECT), `unscorable`
    left out. Under `MIN_CELL_N` graded answers or about one entity the cell is `too_few`
    (`clkt.report.metric_table.open_too_few`, the rule of every open-answer cell): its counts only, no accuracy, no
    interval."""

    train_lang: str
    variant: str
    split: str
    lang: str
    n: int
    correct: int
    too_few: bool
    accuracy: float | None  # None when too few (or nothing graded)
    ci: tuple[float, float] | None  # None when too few
    entities: int
    other_language: int
    unscorable: int


class OpenMetrics(_Model):
    """The open track's figures (`scorer`: the layer that graded them), never pooled with a multiple-choice scorer's."""

    scorer: str
    cells: list[OpenCell]
    figures: ScorerMetrics  # the test split's accuracy, Learn, pairs and means, as a multiple-choice scorer's


class PackMetrics(_Model):
    format_version: int
    scorers: dict[str, ScorerMetrics] = Field(default_factory=dict)
    # the open track's (format version 2, `open_answers.jsonl`); left out without open answers
    open: OpenMetrics | None = Field(default=None, exclude_if=lambda v: v is None)
    # set only by the taker (`clkt submit`): the probe's verdicts, the figures computed without the entities excluded
    probe: ProbeVerdicts | None = Field(default=None, exclude_if=lambda v: v is None)


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


def _means(pairs: Sequence[PairRow], learn: dict[str, LearnSummary]) -> dict[str, float | None]:
    """Per metric, the mean over the pairs where it is defined; a metric that needs its train language to have
    learned (Transfer) over the pairs whose train language learned (`learn`), as the report and the leaderboard
    read the same answers (`clkt.report.metric_table`)."""
    out: dict[str, float | None] = {}
    for m in PAIR_METRICS:
        vals = [v for p in pairs if (v := p.values.get(m.key)) is not None
                and not (m.needs_learned and not (p.train_lang in learn and learn[p.train_lang].learned))]
        out[m.key] = sum(vals) / len(vals) if vals else None
    return out


def kept_cells(
    rows: Iterable[LocalityRow], *, snapshot_id: str, seed: int = KEPT_SEED, samples: int = BOOTSTRAP_SAMPLES,
    min_n: int = MIN_KEPT_N,
) -> dict[str, list[KeptCell]]:
    """scorer -> kept % per train language x test language of the locality answers `rows` (paired by question as
    the job pairs them, `clkt.evaluate.locality.locality_counts`)."""
    by_train: dict[str, list[LocalityRow]] = {}
    for r in rows:
        by_train.setdefault(r.train_lang, []).append(r)
    out: dict[str, list[KeptCell]] = {}
    for train, sel in sorted(by_train.items()):
        items = [ResultItem(qid=r.qid, lang=r.lang, variant=Variant(r.variant), scorer=r.scorer, split=r.split,
                            predicted=r.predicted, correct=r.correct) for r in sel]
        counts = locality_counts(items, {r.qid: r.entity_id for r in sel})
        for scorer, langs in counts.items():
            for lang, c in langs.items():
                fig = kept_figure(c, snapshot_id=snapshot_id, seed=seed, samples=samples, min_n=min_n)
                out.setdefault(scorer, []).append(
                    KeptCell(train_lang=train, lang=lang, right_before=c.base_right, **fig.model_dump()))
    return out


def compute_metrics(
    rows: Iterable[PredictionRow], languages: Sequence[str], *, format_version: int,
    locality: Iterable[LocalityRow] = (), snapshot_id: str = "",
) -> PackMetrics:
    """The metrics of `rows` over the snapshot's `languages`, with kept % from the `locality` answers (their
    interval seeded by `snapshot_id`, the snapshot's; see the module docstring)."""
    by_scorer: dict[str, list[PredictionRow]] = {}
    for r in rows:
        by_scorer.setdefault(r.scorer, []).append(r)
    kept = kept_cells(locality, snapshot_id=snapshot_id)
    scorers: dict[str, ScorerMetrics] = {}
    for scorer in sorted(set(by_scorer) | set(kept)):
        sel = by_scorer.get(scorer, [])
        pairs, learn = _pairs(sel, languages), _learn(sel)
        scorers[scorer] = ScorerMetrics(accuracy=_accuracy(sel), learn=learn, pairs=pairs, means=_means(pairs, learn),
                                        locality=kept.get(scorer, []))
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
