"""The leaderboard: per target x strategy x result scorer, Learn, Overall and Transfer pooled over a window of
snapshots, each with its n and a 95% bootstrap interval over entities, one column per snapshot, and the
language pairs of the window (the heatmap of the window).

A target's numbers pool only the snapshots valid for it (`snapshot_target` ready) and, in each, only the
entities it did not recognise (its exclusions). Pooling sums the contingency A/B/C/D of every language pair
and the Learn counts of every train language over the window's questions (`clkt.report.pooled`); then, as in
a snapshot's report: Learn = base against injected on the same train-language questions (exact McNemar; a
train language learned when its gain is positive with p < `LEARN_ALPHA`), Overall = mean over pairs of
A/(A+B+C+D), Transfer = mean over the pairs whose train language was learned of A/(A+B). A row resting on
fewer than `MIN_QUESTIONS` distinct test questions is `too_few` and never ranked. Within each strategy x
scorer, rows are ranked by Overall, and a row only ranks below the rows whose whole interval lies above its
own: rows the intervals cannot separate share a rank (`tied`). A group whose jobs ran with several training seeds
(`spec.seeds`) is pooled over them (`clkt.report.seeds.seed_row`: the mean over seeds, an interval over entities
and seeds, the between-seed std); one seed gives the row it always did. A row's interval draws its own entities
(`clkt.report.pooled.Draws.own`), so its figures depend on its content alone: they are computed once per content and
read back (`clkt.report.row_cache`). Beside them, a row pools its jobs' kept % (locality, `pooled_kept`) and, an open
layer's row, its jobs' control split (`clkt.report.open_control.control_estimate`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from clkt.report.basics import BOOTSTRAP_SAMPLES, Contingency
from clkt.report.leaderboard_data import MIN_QUESTIONS, Estimate, LeaderRow, LearnEstimate, PairCell, SnapshotColumn
from clkt.report.learn import stat_from_counts
from clkt.report.locality import pooled_kept
from clkt.report.metric_table import HEATMAP, PAIR_METRICS, RANK_BY, learn_gain, ratio
from clkt.report.open_control import control_estimate
from clkt.report.pooled import (
    Answers,
    Draws,
    Layout,
    Pooled,
    Sums,
    boot_matrix,
    decode,
    draw_sums,
    full_sums,
    one_blas_thread,
    percentile_ci,
    pool,
)
from clkt.report.pooled_metrics import learned_trains, metric_of
from clkt.report.row_cache import RowCache, row_key
from clkt.report.seeds import by_seed, seed_row
from storage.leaderboard import WindowData, WindowJob

__all__ = [
    "Keyed",
    "build_rows",
    "group_answers",
    "keyed_groups",
    "learned_trains",
    "metric_of",
    "rank_rows",
    "window_draws",
]

ROW_THREADS = min(4, os.cpu_count() or 1)  # rows built at once (same rows, same order, whatever the number)
ROWS = RowCache()  # each row's figures, by its content (`clkt.report.row_cache`): computed once per content

def _interpretable(layout: Layout, learned: np.ndarray) -> np.ndarray:
    return np.asarray([bool(learned[layout.train_index[lt]]) for lt, _ in layout.pairs], dtype=bool)


def _value(x: np.ndarray) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def window_draws(data: WindowData, *, seed: int, samples: int) -> Draws | None:
    """The window's bootstrap (`clkt.report.pooled.Draws`): its snapshots' names, the seed and the public ids, from
    which each row (and comparison) takes the draws of its own entities (`Draws.own`); None without draws."""
    if samples <= 0:
        return None
    return Draws(universes={}, names={i: s.id for i, s in enumerate(data.snapshots)}, seed=seed, samples=samples,
                 public=data.public_entities)


# -- rows -------------------------------------------------------------------------------------------------------

Group = tuple[str, str, str]  # (target, strategy, scorer)
Keyed = tuple[str, Group, list[Answers]]  # a group's row key (`clkt.report.row_cache.row_key`), the group, its answers


def group_answers(data: WindowData) -> dict[Group, list[Answers]]:
    """Each group's decoded answers (exclusions removed), from the packs of the jobs that count."""
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    jobs: dict[int, WindowJob] = {j.id: j for j in data.jobs}
    out: dict[Group, list[Answers]] = defaultdict(list)
    for p in data.packs:
        j = jobs.get(p.job_id)
        if j is None or (j.snapshot_id, j.target) not in data.ready:
            continue
        excluded = data.exclusions.get((j.snapshot_id, j.target), frozenset())
        out[(j.target, j.strategy, p.scorer)].append(
            decode(p, snapshot=index[j.snapshot_id], train_lang=j.train_lang, excluded=excluded, seed=j.seed)
        )
    return dict(sorted(out.items()))


def _layout(answers: Sequence[Answers], languages: Sequence[str]) -> Layout:
    seen = {lang for a in answers for lang in a.langs}
    langs = [x for x in languages if x in seen] + sorted(seen - set(languages))
    trains = [x for x in langs if any(a.train_lang == x for a in answers)]
    return Layout(languages=tuple(langs), trains=tuple(trains))


def _learn(s: Sums, draws: Sums | None) -> LearnEstimate:
    n, bc, ic, g, lo = (int(v) for v in s.learn.sum(axis=-2))
    stat = stat_from_counts(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo) if n else None
    inj_ci = gain_ci = None
    if draws is not None and n:
        d = draws.learn.sum(axis=-2)  # (B, 5)
        inj_ci = percentile_ci(ratio(d[:, 2], d[:, 0]))
        gain_ci = percentile_ci(ratio(d[:, 2] - d[:, 1], d[:, 0]))
    return LearnEstimate(
        n=n, base=stat.base_accuracy if stat else None,
        injected=Estimate(value=stat.injected_accuracy if stat else None, ci=inj_ci, n=n),
        gain=Estimate(value=stat.gain if stat else None, ci=gain_ci, n=n), gained=g, lost=lo,
        p_value=stat.p_value if stat else 1.0, learned=bool(stat is not None and stat.learned),
    )


def _gain(s: Sums, draws: Sums | None) -> Estimate:
    """Learn's gain (injected - base accuracy on the same train-language questions), without its test."""
    n, bc, ic = (int(v) for v in s.learn.sum(axis=-2)[:3])
    ci = None
    if draws is not None and n:
        d = draws.learn.sum(axis=-2)
        ci = percentile_ci(ratio(d[:, 2] - d[:, 1], d[:, 0]))
    return Estimate(value=learn_gain(base_correct=bc, injected_correct=ic, n=n), ci=ci, n=n)


def _estimates(layout: Layout, s: Sums, draws: Sums | None) -> tuple[dict[str, Estimate], np.ndarray]:
    """Every metric of the table over sums `s` (intervals from `draws`), and the interpretable-pair mask used."""
    interp = _interpretable(layout, learned_trains(layout, s))
    out: dict[str, Estimate] = {}
    for m in PAIR_METRICS:
        keep = interp if m.needs_learned else np.ones(len(layout.pairs), dtype=bool)
        ci = percentile_ci(metric_of(m, draws, interp)) if draws is not None else None
        out[m.key] = Estimate(value=_value(metric_of(m, s, interp)), ci=ci, n=int(s.cells[m.denominator][keep].sum()))
    return out, interp


def _pairs(layout: Layout, s: np.ndarray, draws: Sums | None, interp: np.ndarray) -> list[PairCell]:
    t = layout.pair_sums(s).astype(int)
    per_draw = {m.key: m.ratio(draws.cells) for m in PAIR_METRICS} if draws is not None else {}
    out: list[PairCell] = []
    for i, (lt, ls) in enumerate(layout.pairs):
        a, b, c, dd = (int(x) for x in t[i])
        table = Contingency(a=a, b=b, c=c, d=dd)
        metrics = {
            m.key: Estimate(value=m.value(table), n=m.n(table),
                            ci=percentile_ci(per_draw[m.key][:, i]) if per_draw and m.n(table) else None)
            for m in PAIR_METRICS
        }
        out.append(PairCell(train_lang=lt, test_lang=ls, table=table, metrics=metrics,
                            reading=HEATMAP.reading(table, learned=bool(interp[i]))))
    return out


def _row(group: Group, pooled: Pooled, data: WindowData, *, draws: Draws | None, min_questions: int) -> LeaderRow:
    target, strategy, scorer = group
    layout = pooled.layout
    reduced = draws.sums(pooled.keys, boot_matrix(layout, pooled.counts)) if draws is not None else {}
    strata = {k: draw_sums(layout, v) for k, v in reduced.items()}
    total = draw_sums(layout, np.sum(list(reduced.values()), axis=0)) if reduced else None
    counts = pooled.counts.sum(axis=0)
    s = full_sums(layout, counts)
    metrics, interp = _estimates(layout, s, total)
    learn = _learn(s, total)
    columns: list[SnapshotColumn] = []
    for i, snap in enumerate(data.snapshots):
        if (snap.id, target) not in data.ready:
            columns.append(SnapshotColumn(snapshot_id=snap.id, period=snap.period, status="not valid"))
            continue
        if i not in pooled.questions:
            columns.append(SnapshotColumn(snapshot_id=snap.id, period=snap.period, status="no results"))
            continue
        rows = pooled.stratum(i)
        ss = full_sums(layout, pooled.counts[rows].sum(axis=0))
        columns.append(SnapshotColumn(
            snapshot_id=snap.id, period=snap.period, status="ok", questions=pooled.questions[i],
            entities=rows.stop - rows.start, metrics=_estimates(layout, ss, strata.get(i))[0],
            learn_gain=_gain(ss, strata.get(i)),
        ))
    questions = sum(pooled.questions.values())
    # the row's jobs in its valid snapshots: their locality counts (kept %) and open control tallies, pooled
    jobs = [j for j in data.jobs if (j.target, j.strategy) == (target, strategy) and (j.snapshot_id, target) in data.ready]
    boot = {"seed": draws.seed, "samples": draws.samples} if draws is not None else {"seed": 0, "samples": 0}
    return LeaderRow(
        target=target, strategy=strategy, scorer=scorer, snapshots=len(pooled.questions), questions=questions,
        entities=len(pooled.keys), train_langs=list(layout.trains),
        learned_langs=[t for t, ok in zip(layout.trains, learned_trains(layout, s), strict=True) if ok], metrics=metrics,
        learn=learn, not_interpretable=int(sum(1 for i, p in enumerate(layout.pair_sums(counts)) if p.sum() > 0 and not interp[i])),
        too_few=questions < min_questions, pairs=_pairs(layout, counts, total, interp),
        per_snapshot=columns, kept=pooled_kept(((j.snapshot_id, j.locality) for j in jobs if j.locality), scorer=scorer,
                                               public=data.public_entities, **boot),
        control=control_estimate(((j.snapshot_id, j.control) for j in jobs if j.control), scorer=scorer, **boot),
    )


def build_rows(
    data: WindowData, languages: Sequence[str], *, seed: int = 0, samples: int = BOOTSTRAP_SAMPLES,
    min_questions: int = MIN_QUESTIONS, draws: Draws | None = None, keyed: Sequence[Keyed] | None = None,
) -> list[LeaderRow]:
    """One row per (target, strategy, scorer) with answers in the window, ranked (see the module docstring);
    `draws`: the window's (`window_draws`, made from `seed` and `samples` when not given); `keyed`: the groups'
    `keyed_groups` with the same draws and minimum, when the caller has them already."""
    draws = draws if draws is not None else window_draws(data, seed=seed, samples=samples)
    groups = list(keyed) if keyed is not None else keyed_groups(data, languages, draws=draws, min_questions=min_questions)

    def one(item: Keyed) -> LeaderRow | None:
        key, group, answers = item
        return ROWS.get_or_build(key, lambda: _group_row(group, answers))

    def _group_row(group: Group, answers: list[Answers]) -> LeaderRow | None:
        layout = _layout(answers, languages)
        pooled = pool(answers, layout)
        if not len(pooled.keys):
            return None
        own = draws.own(pooled.keys) if draws is not None else None  # the row's own entities (`Draws.own`)
        row = _row(group, pooled, data, draws=own, min_questions=min_questions)
        if len({a.seed for a in answers}) > 1:  # several training seeds: pooled over them (clkt.report.seeds)
            row = seed_row(row, by_seed(answers), layout, draws=own)
        return row

    with one_blas_thread():
        workers = min(len(groups), ROW_THREADS)
        if workers > 1:  # numpy's sorts, searches and products release the GIL: rows in parallel
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="leaderboard-row") as ex:
                got = list(ex.map(one, groups))
        else:
            got = [one(g) for g in groups]
    return rank_rows([r for r in got if r is not None])


def keyed_groups(
    data: WindowData, languages: Sequence[str], *, draws: Draws | None, min_questions: int,
) -> list[Keyed]:
    """Each group's row key (`clkt.report.row_cache.row_key`), the group and its answers."""
    return [(row_key(group, answers, data, languages=languages, draws=draws, min_questions=min_questions), group, answers)
            for group, answers in group_answers(data).items()]


def rank_rows(rows: Sequence[LeaderRow]) -> list[LeaderRow]:
    """Rank within each strategy x scorer by Overall: a row's rank is 1 + the rows whose whole interval lies
    above its own; rows sharing a rank are `tied`. Rows too few to rank (or without an Overall) get none."""
    out: list[LeaderRow] = []
    by: dict[tuple[str, str], list[LeaderRow]] = defaultdict(list)
    for r in rows:
        by[(r.strategy, r.scorer)].append(r)
    for _, group in sorted(by.items()):
        rankable = [r for r in group if not r.too_few and r.metric(RANK_BY.key).value is not None]

        def bounds(r: LeaderRow) -> tuple[float, float]:
            est = r.metric(RANK_BY.key)
            v = est.value or 0.0
            return est.ci or (v, v)

        ranks = {r.target: 1 + sum(1 for o in rankable if o is not r and bounds(o)[0] > bounds(r)[1]) for r in rankable}
        counts: dict[int, int] = defaultdict(int)
        for v in ranks.values():
            counts[v] += 1
        ranked = [r.model_copy(update={"rank": ranks[r.target], "tied": counts[ranks[r.target]] > 1}) for r in rankable]
        ranked.sort(key=lambda r: (r.rank or 0, -(r.metric(RANK_BY.key).value or 0.0), r.target))
        rest = sorted((r for r in group if r not in rankable), key=lambda r: r.target)
        out.extend(ranked + rest)
    return out
