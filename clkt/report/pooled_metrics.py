"""The metrics of the table over pooled sums (`clkt.report.pooled.Sums`): a metric's mean over pairs, and which
train languages learned. Shared by the leaderboard's rows (`clkt.report.leaderboard`), the rows pooled over
training seeds (`clkt.report.seeds`) and the per-domain board (`clkt.report.by_domain`)."""

from __future__ import annotations

from functools import partial

import numpy as np

from clkt.report.learn import LEARN_ALPHA
from clkt.report.metric_table import PairMetric, learned
from clkt.report.pooled import Layout, Sums, nanmean
from clkt.report.stats import mcnemar_significant

__all__ = ["learned_trains", "metric_of"]


def metric_of(metric: PairMetric, sums: Sums, interpretable: np.ndarray) -> np.ndarray:
    """The mean over pairs of a metric of the table, over the pairs it is defined on (and, for a metric that
    needs its train language to have learned, the interpretable ones); (...,) for sums of (..., P)."""
    per_pair = metric.ratio(sums.cells)
    if metric.needs_learned:
        per_pair = np.where(interpretable, per_pair, np.nan)
    return nanmean(per_pair)


def learned_trains(layout: Layout, sums: Sums) -> np.ndarray:
    """Per train language, whether it learned (`clkt.report.metric_table.learned`: a positive gain with exact
    McNemar p < `LEARN_ALPHA`, decided by `mcnemar_significant`, the same decision without scipy: it is taken
    per snapshot)."""
    out = []
    for n, bc, ic, g, lo in sums.learn.astype(int).tolist():
        out.append(learned(n=n, base_correct=bc, injected_correct=ic,
                           significant=partial(mcnemar_significant, g, lo, LEARN_ALPHA)))
    return np.asarray(out, dtype=bool)
