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
own: rows the intervals cannot separate share a rank (`tied`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from clkt.report.basics import BOOTSTRAP_SAMPLES, MIN_CELL_N, Contingency
from clkt.report.leaderboard_data import MIN_QUESTIONS, Estimate, LeaderRow, LearnEstimate, PairCell, SnapshotColumn
from clkt.report.learn import LEARN_ALPHA, stat_from_counts
from clkt.report.pooled import (
    Answers,
    Draws,
    Layout,
    Pooled,
    boot_matrix,
    decode,
    expand,
    nanmean,
    one_blas_thread,
    percentile_ci,
    pool,
    universes,
)
from clkt.report.stats import mcnemar_significant
from storage.leaderboard import WindowData, WindowJob
from storage.result_packs import ResultPackRecord

__all__ = [
    "build_rows",
    "group_answers",
    "learned_trains",
    "overall_of",
    "rank_rows",
    "transfer_of",
    "window_draws",
]

ROW_THREADS = min(4, os.cpu_count() or 1)  # rows built at once (same rows, same order, whatever the number)

# -- the metrics over sums ---------------------------------------------------------------------------------------

def overall_of(layout: Layout, s: np.ndarray) -> np.ndarray:
    """Mean over the pairs with questions of A/(A+B+C+D); (...,) for sums (..., width)."""
    t = layout.pair_sums(s)
    n = t.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return nanmean(np.where(n > 0, t[..., 0] / np.maximum(n, 1), np.nan))


def transfer_of(layout: Layout, s: np.ndarray, interpretable: np.ndarray) -> np.ndarray:
    """Mean over the interpretable pairs with A+B > 0 of A/(A+B)."""
    t = layout.pair_sums(s)
    ab = t[..., 0] + t[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return nanmean(np.where((ab > 0) & interpretable, t[..., 0] / np.maximum(ab, 1), np.nan))


def learned_trains(layout: Layout, s: np.ndarray) -> np.ndarray:
    """Per train language, whether it learned: `LearnStat.learned` (a positive gain with exact McNemar p <
    `LEARN_ALPHA`), decided by `mcnemar_significant` (the same decision, without scipy: it is taken per snapshot)."""
    out = []
    for n, bc, ic, g, lo in layout.learn_sums(s).astype(int).tolist():
        out.append(n > 0 and ic > bc and mcnemar_significant(g, lo, LEARN_ALPHA))
    return np.asarray(out, dtype=bool)


def _interpretable(layout: Layout, learned: np.ndarray) -> np.ndarray:
    return np.asarray([bool(learned[layout.train_index[lt]]) for lt, _ in layout.pairs], dtype=bool)


def _value(x: np.ndarray) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def window_draws(data: WindowData, *, seed: int, samples: int) -> Draws | None:
    """The bootstrap's draws of the window (`clkt.report.pooled.Draws`), over each snapshot's entities; None
    without draws."""
    if samples <= 0:
        return None
    index = {s.id: i for i, s in enumerate(data.snapshots)}
    snap_of = {j.id: index[j.snapshot_id] for j in data.jobs}
    by: dict[int, list[ResultPackRecord]] = defaultdict(list)
    for p in data.packs:
        if p.job_id in snap_of:
            by[snap_of[p.job_id]].append(p)
    return Draws(universes=universes(by), names={i: s.id for i, s in enumerate(data.snapshots)}, seed=seed, samples=samples)


# -- rows -------------------------------------------------------------------------------------------------------

Group = tuple[str, str, str]  # (target, strategy, scorer)


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
            decode(p, snapshot=index[j.snapshot_id], train_lang=j.train_lang, excluded=excluded)
        )
    return dict(sorted(out.items()))


def _layout(answers: Sequence[Answers], languages: Sequence[str]) -> Layout:
    seen = {lang for a in answers for lang in a.langs}
    langs = [x for x in languages if x in seen] + sorted(seen - set(languages))
    trains = [x for x in langs if any(a.train_lang == x for a in answers)]
    return Layout(languages=tuple(langs), trains=tuple(trains))


def _learn(layout: Layout, s: np.ndarray, draws: np.ndarray | None) -> LearnEstimate:
    n, bc, ic, g, lo = (int(v) for v in layout.learn_sums(s).sum(axis=-2))
    stat = stat_from_counts(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo) if n else None
    inj_ci = gain_ci = None
    if draws is not None and n:
        d = layout.learn_sums(draws).sum(axis=-2)  # (B, 5)
        with np.errstate(invalid="ignore", divide="ignore"):
            inj_ci = percentile_ci(np.where(d[:, 0] > 0, d[:, 2] / np.maximum(d[:, 0], 1), np.nan))
            gain_ci = percentile_ci(np.where(d[:, 0] > 0, (d[:, 2] - d[:, 1]) / np.maximum(d[:, 0], 1), np.nan))
    return LearnEstimate(
        n=n, base=stat.base_accuracy if stat else None,
        injected=Estimate(value=stat.injected_accuracy if stat else None, ci=inj_ci, n=n),
        gain=Estimate(value=stat.gain if stat else None, ci=gain_ci, n=n), gained=g, lost=lo,
        p_value=stat.p_value if stat else 1.0, learned=bool(stat is not None and stat.learned),
    )


def _gain(layout: Layout, s: np.ndarray, draws: np.ndarray | None) -> Estimate:
    """Learn's gain (injected - base accuracy on the same train-language questions), without its test."""
    n, bc, ic = (int(v) for v in layout.learn_sums(s).sum(axis=-2)[:3])
    ci = None
    if draws is not None and n:
        d = layout.learn_sums(draws).sum(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            ci = percentile_ci(np.where(d[:, 0] > 0, (d[:, 2] - d[:, 1]) / np.maximum(d[:, 0], 1), np.nan))
    return Estimate(value=(ic - bc) / n if n else None, ci=ci, n=n)


def _estimates(
    layout: Layout, s: np.ndarray, draws: np.ndarray | None
) -> tuple[Estimate, Estimate, np.ndarray]:
    """Overall and Transfer of sums `s` (intervals from `draws`), and the interpretable-pair mask used."""
    learned = learned_trains(layout, s)
    interp = _interpretable(layout, learned)
    t = layout.pair_sums(s)
    n_overall = int(t.sum())
    n_transfer = int((t[..., 0] + t[..., 1])[interp].sum())
    o_ci = percentile_ci(overall_of(layout, draws)) if draws is not None else None
    t_ci = percentile_ci(transfer_of(layout, draws, interp)) if draws is not None else None
    return (
        Estimate(value=_value(overall_of(layout, s)), ci=o_ci, n=n_overall),
        Estimate(value=_value(transfer_of(layout, s, interp)), ci=t_ci, n=n_transfer),
        interp,
    )


def _pairs(layout: Layout, s: np.ndarray, draws: np.ndarray | None, interp: np.ndarray) -> list[PairCell]:
    t = layout.pair_sums(s).astype(int)
    out: list[PairCell] = []
    d = layout.pair_sums(draws) if draws is not None else None
    for i, (lt, ls) in enumerate(layout.pairs):
        a, b, c, dd = (int(x) for x in t[i])
        n, ab = a + b + c + dd, a + b
        o_ci = tr_ci = None
        if d is not None:
            dn, dab = d[:, i].sum(axis=-1), d[:, i, 0] + d[:, i, 1]
            with np.errstate(invalid="ignore", divide="ignore"):
                o_ci = percentile_ci(np.where(dn > 0, d[:, i, 0] / np.maximum(dn, 1), np.nan)) if n else None
                tr_ci = percentile_ci(np.where(dab > 0, d[:, i, 0] / np.maximum(dab, 1), np.nan)) if ab else None
        reading = ("missing" if n == 0 else "not interpretable" if not interp[i] else "undefined" if ab == 0
                   else "too few" if ab < MIN_CELL_N else "ok")
        out.append(PairCell(
            train_lang=lt, test_lang=ls, table=Contingency(a=a, b=b, c=c, d=dd),
            overall=Estimate(value=a / n if n else None, ci=o_ci, n=n),
            transfer=Estimate(value=a / ab if ab else None, ci=tr_ci, n=ab), reading=reading,
        ))
    return out


def _row(group: Group, pooled: Pooled, data: WindowData, *, draws: Draws | None, min_questions: int) -> LeaderRow:
    target, strategy, scorer = group
    layout = pooled.layout
    reduced = draws.sums(pooled.keys, boot_matrix(layout, pooled.counts)) if draws is not None else {}
    strata = {k: expand(layout, v) for k, v in reduced.items()}
    total = expand(layout, np.sum(list(reduced.values()), axis=0)) if reduced else None
    s = pooled.counts.sum(axis=0)
    overall, transfer, interp = _estimates(layout, s, total)
    learn = _learn(layout, s, total)
    columns: list[SnapshotColumn] = []
    for i, snap in enumerate(data.snapshots):
        if (snap.id, target) not in data.ready:
            columns.append(SnapshotColumn(snapshot_id=snap.id, period=snap.period, status="not valid"))
            continue
        if i not in pooled.questions:
            columns.append(SnapshotColumn(snapshot_id=snap.id, period=snap.period, status="no results"))
            continue
        rows = pooled.stratum(i)
        ss = pooled.counts[rows].sum(axis=0)
        o, tr, _ = _estimates(layout, ss, strata.get(i))
        g = _gain(layout, ss, strata.get(i))
        columns.append(SnapshotColumn(
            snapshot_id=snap.id, period=snap.period, status="ok", questions=pooled.questions[i],
            entities=rows.stop - rows.start, overall=o, transfer=tr, learn_gain=g,
        ))
    questions = sum(pooled.questions.values())
    return LeaderRow(
        target=target, strategy=strategy, scorer=scorer, snapshots=len(pooled.questions), questions=questions,
        entities=len(pooled.keys), train_langs=list(layout.trains),
        learned_langs=[t for t, ok in zip(layout.trains, learned_trains(layout, s), strict=True) if ok], overall=overall, transfer=transfer, learn=learn,
        not_interpretable=int(sum(1 for i, p in enumerate(layout.pair_sums(s)) if p.sum() > 0 and not interp[i])),
        too_few=questions < min_questions, pairs=_pairs(layout, s, total, interp),
        per_snapshot=columns,
    )


def build_rows(
    data: WindowData, languages: Sequence[str], *, seed: int = 0, samples: int = BOOTSTRAP_SAMPLES,
    min_questions: int = MIN_QUESTIONS, draws: Draws | None = None,
) -> list[LeaderRow]:
    """One row per (target, strategy, scorer) with answers in the window, ranked (see the module docstring);
    `draws`: the window's (`window_draws`, made from `seed` and `samples` when not given)."""
    draws = draws if draws is not None else window_draws(data, seed=seed, samples=samples)
    groups = list(group_answers(data).items())

    def one(item: tuple[Group, list[Answers]]) -> LeaderRow | None:
        group, answers = item
        pooled = pool(answers, _layout(answers, languages))
        return _row(group, pooled, data, draws=draws, min_questions=min_questions) if len(pooled.keys) else None

    with one_blas_thread():
        if draws is not None:
            for s in draws.universes:  # made once, before the rows share them
                draws.weights(s)
        workers = min(len(groups), ROW_THREADS)
        if workers > 1:  # numpy's sorts, searches and products release the GIL: rows in parallel
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="leaderboard-row") as ex:
                got = list(ex.map(one, groups))
        else:
            got = [one(g) for g in groups]
    return rank_rows([r for r in got if r is not None])


def rank_rows(rows: Sequence[LeaderRow]) -> list[LeaderRow]:
    """Rank within each strategy x scorer by Overall: a row's rank is 1 + the rows whose whole interval lies
    above its own; rows sharing a rank are `tied`. Rows too few to rank (or without an Overall) get none."""
    out: list[LeaderRow] = []
    by: dict[tuple[str, str], list[LeaderRow]] = defaultdict(list)
    for r in rows:
        by[(r.strategy, r.scorer)].append(r)
    for _, group in sorted(by.items()):
        rankable = [r for r in group if not r.too_few and r.overall.value is not None]

        def bounds(r: LeaderRow) -> tuple[float, float]:
            v = r.overall.value or 0.0
            return r.overall.ci or (v, v)

        ranks = {r.target: 1 + sum(1 for o in rankable if o is not r and bounds(o)[0] > bounds(r)[1]) for r in rankable}
        counts: dict[int, int] = defaultdict(int)
        for v in ranks.values():
            counts[v] += 1
        ranked = [r.model_copy(update={"rank": ranks[r.target], "tied": counts[ranks[r.target]] > 1}) for r in rankable]
        ranked.sort(key=lambda r: (r.rank or 0, -(r.overall.value or 0.0), r.target))
        rest = sorted((r for r in group if r not in rankable), key=lambda r: r.target)
        out.extend(ranked + rest)
    return out
