"""Scores over training seeds (`spec.seeds`, issue 35 item 1): the runs of one (target, strategy, scorer) with
several injection seeds, each pooled as the leaderboard pools a job's answers (`clkt.report.pooled`), give per
metric of the table

- each seed's value (`metric_of` over that seed's sums; Transfer over the pairs whose train language learned by
  the one rule of `clkt.report.metric_table`: the exact McNemar on every seed's paired answers together, the same
  pairs in every seed),
- their mean and the **between-seed spread** (sample std over seeds, ddof 1; None for one seed),
- the **sampling interval** of the mean: the window's draws of entities (`Draws`, the leaderboard's), the seeds
  fixed,
- the **total interval**, covering both: each side's half-width of the sampling interval (measured from the
  mean) combined in quadrature with the between-seed term t_{k-1, 0.975} * sd / sqrt(k) (k the seeds with a
  value, sd their between-seed std), clipped to [0, 1]: `mean -/+ sqrt(half_side^2 + (t * sd / sqrt(k))^2)`.
  The seed term is the Student-t interval of a mean of k runs, honest for few seeds; a bootstrap that resamples
  the k seeds (the method before) has only (k-1)/k of their variance and, with k = 3, 10 distinct draws, and
  gave a pooled interval narrower than a single seed's. The two terms add as variances because the seeds'
  training randomness and the entities' sampling are independent. With one seed (no sd) it is exactly the
  sampling interval, which is the leaderboard's own interval of that job.

`seed_row` turns a leaderboard row built on every seed's answers into the row pooled over seeds: each metric of
the table is the mean over seeds with the total interval (`ci`), the sampling one (`sampling_ci`) and the
between-seed std (`seed_std`). Learn is the row's, on every seed's paired answers together: a train language
learned when the exact McNemar on the summed gained / lost of its seeds says so (`clkt.report.metric_table.learned`,
the rule every view applies: the heatmap, the snapshot columns, the comparisons, the per-domain board, the report);
the row's p-value is that test's; its injected accuracy and gain those of every seed's answers together (the mean
over seeds when they answer the same questions), with their between-seed std. Transfer is computed per seed over
the pairs whose train language learned by that rule, then averaged. The per-pair and per-snapshot cells pool every
seed's answers (their n counts each seed's answer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clkt.report.leaderboard_data import LeaderRow
from clkt.report.learn import stat_from_counts
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.pooled import Answers, Draws, Layout, boot_matrix, draw_sums, full_sums, nanmean, percentile_ci, pool
from clkt.report.pooled_metrics import learned_trains, metric_of

__all__ = ["SeedMetric", "SeedSummary", "by_seed", "learned_mask", "over_seeds", "seed_row", "seed_term", "t975",
           "total_interval", "widen"]

# Student's t, two-sided 95 % (the 0.975 quantile), for 1-30 degrees of freedom (scipy.stats.t.ppf to 6 places;
# `tests/report/test_seeds.py` checks them against scipy, not imported here: `scipy.stats` costs 0.6 s to import,
# a third of the leaderboard's 2 s)
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
         2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
         2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272)


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` (>= 1) degrees of freedom; past 30 the normal's 1.96 (within
    4 % of t there)."""
    if df < 1:
        raise ValueError(f"t975: degrees of freedom must be >= 1, got {df}")
    return _T975[df - 1] if df <= len(_T975) else 1.959964


class SeedMetric(BaseModel):
    model_config = ConfigDict(frozen=True)

    per_seed: dict[int, float | None]  # seed -> its value
    mean: float | None  # over the seeds with a value
    between_seed_std: float | None  # sample std over seeds (ddof 1); None under two seeds
    sampling_ci: tuple[float, float] | None = None  # entities drawn, seeds fixed
    total_ci: tuple[float, float] | None = None  # sampling widened by the between-seed t term


class SeedSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    seeds: list[int]
    metrics: dict[str, SeedMetric] = Field(default_factory=dict)  # per metric of the table ("overall", ...)


def _per_seed(answers: Sequence[Answers], layout: Layout, draws: Draws | None, mask: np.ndarray,
              ) -> dict[str, tuple[float, np.ndarray | None]]:
    """One seed's value of each metric (and its draws), over the pairs `mask` keeps for a metric that needs its
    train language to have learned (the row's learned rule, the same for every seed)."""
    pooled = pool(answers, layout)
    s = full_sums(layout, pooled.counts.sum(axis=0))
    d = None
    if draws is not None and len(pooled.keys):
        reduced = draws.sums(pooled.keys, boot_matrix(layout, pooled.counts))
        d = draw_sums(layout, np.sum(list(reduced.values()), axis=0))
    return {m.key: (float(metric_of(m, s, mask)), metric_of(m, d, mask) if d is not None else None) for m in PAIR_METRICS}


def learned_mask(layout: Layout, answers: Sequence[Answers]) -> np.ndarray:
    """Per pair of `layout`, whether its train language learned under the one rule (`clkt.report.metric_table`,
    "learned"): the exact McNemar on every seed's paired answers together (`learned_trains` of the sums of all of
    them)."""
    learned = learned_trains(layout, full_sums(layout, pool(answers, layout).counts.sum(axis=0)))
    return np.asarray([bool(learned[layout.train_index[lt]]) for lt, _ in layout.pairs], dtype=bool)


def seed_term(values: Sequence[float]) -> float:
    """The between-seed term of a mean over k seeds: t_{k-1,0.975} * sd / sqrt(k) (sd with ddof 1); 0 under two."""
    k = len(values)
    if k < 2:
        return 0.0
    return t975(k - 1) * float(np.std(values, ddof=1)) / math.sqrt(k)


def widen(sampling: tuple[float, float], center: float, term: float, *,
          bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """`sampling` widened by `term`: each side's half-width from `center` in quadrature with it, clipped to `bounds`
    ([0, 1] for a rate, [-1, 1] for a difference of two)."""
    lo_half, hi_half = max(center - sampling[0], 0.0), max(sampling[1] - center, 0.0)
    return (max(bounds[0], center - math.hypot(lo_half, term)), min(bounds[1], center + math.hypot(hi_half, term)))


def total_interval(sampling: tuple[float, float], values: Sequence[float]) -> tuple[float, float]:
    """The sampling interval of the seeds' mean widened by the between-seed term (see the module docstring):
    each side's half-width from the mean in quadrature with t_{k-1,0.975} * sd / sqrt(k), clipped to [0, 1];
    under two seeds the sampling interval itself."""
    if len(values) < 2:
        return sampling
    return widen(sampling, float(np.mean(values)), seed_term(values))


def over_seeds(
    by_seed: Mapping[int, Sequence[Answers]], layout: Layout, *, draws: Draws | None, mask: np.ndarray | None = None,
) -> SeedSummary:
    """Each metric over the seeds of one group (see the module docstring); `mask`: the pairs a metric that needs
    learning keeps (default: the group's, `learned_mask` of every seed's answers)."""
    seeds = sorted(by_seed)
    if mask is None:
        mask = learned_mask(layout, [a for s in seeds for a in by_seed[s]])
    per = {s: _per_seed(by_seed[s], layout, draws, mask) for s in seeds}
    out: dict[str, SeedMetric] = {}
    for m in PAIR_METRICS:
        values = np.asarray([per[s][m.key][0] for s in seeds], dtype=float)
        ok = values[~np.isnan(values)]
        std = float(ok.std(ddof=1)) if len(ok) >= 2 else None
        sampling = total = None
        boots = [per[s][m.key][1] for s in seeds]
        if seeds and all(b is not None for b in boots):
            v = np.stack([b for b in boots if b is not None])  # (S, B)
            sampling = percentile_ci(nanmean(v, axis=0))
            total = total_interval(sampling, ok.tolist()) if sampling is not None else None
        out[m.key] = SeedMetric(
            per_seed={s: (None if np.isnan(x) else float(x)) for s, x in zip(seeds, values.tolist(), strict=True)},
            mean=float(ok.mean()) if len(ok) else None, between_seed_std=std, sampling_ci=sampling, total_ci=total,
        )
    return SeedSummary(seeds=seeds, metrics=out)


def by_seed(answers: Sequence[Answers]) -> dict[int, list[Answers]]:
    """A group's answers by the training seed of their job."""
    out: dict[int, list[Answers]] = {}
    for a in answers:
        out.setdefault(a.seed, []).append(a)
    return dict(sorted(out.items()))


def _std(values: Sequence[float]) -> float | None:
    return float(np.std(values, ddof=1)) if len(values) >= 2 else None


def seed_row(row: LeaderRow, seeds: Mapping[int, Sequence[Answers]], layout: Layout, *, draws: Draws | None) -> LeaderRow:
    """`row` (built on every seed's answers together) pooled over its seeds (see the module docstring)."""
    mask = np.asarray([lt in row.learned_langs for lt, _ in layout.pairs], dtype=bool)
    summary = over_seeds(seeds, layout, draws=draws, mask=mask)
    metrics = dict(row.metrics)
    for key, sm in summary.metrics.items():
        est = row.metric(key)
        metrics[key] = est.model_copy(update={"value": sm.mean, "ci": sm.total_ci, "sampling_ci": sm.sampling_ci,
                                              "seed_std": sm.between_seed_std})
    stats = []
    for s in summary.seeds:
        n, bc, ic, g, lo = (int(v) for v in full_sums(layout, pool(seeds[s], layout).counts.sum(axis=0)).learn.sum(axis=-2))
        if n:
            stats.append(stat_from_counts(n=n, base_correct=bc, injected_correct=ic, gained=g, lost=lo))
    lr = row.learn  # the row's test: every seed's paired answers together (the one rule); only the spread is added
    learn = lr.model_copy(update={
        "injected": lr.injected.model_copy(update={"seed_std": _std([x for st in stats if (x := st.injected_accuracy) is not None])}),
        "gain": lr.gain.model_copy(update={"seed_std": _std([x for st in stats if (x := st.gain) is not None])}),
    })
    return row.model_copy(update={
        "metrics": metrics, "learn": learn, "seeds": summary.seeds,
        "per_seed": {k: m.per_seed for k, m in summary.metrics.items()},
    })
