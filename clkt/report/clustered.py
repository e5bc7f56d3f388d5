"""The snapshot report's bootstrap: entities resampled, never questions (a clustered bootstrap).

The questions of one entity (and its language pairs) are not independent, so they travel together, as in the
leaderboard (`clkt.report.pooled.Draws`): the report draws a group's entities with the leaderboard's own draws
(the same seed, the snapshot's id, the entities of the group's own answers: `Draws.own`), so a snapshot's pooled
Overall and Transfer carry the same interval in its report (the summary and Table 2's `all` column) and on a
leaderboard of that snapshot, whatever else either holds.

One set of draws serves every domain, every language pair and every metric of a model x strategy x scorer: a
metric added to `clkt.report.metric_table.PAIR_METRICS` moves no other metric's interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from clkt.report.metric_table import PAIR_METRICS, PairMetric, ratio
from clkt.report.pooled import Draws, nanmean, one_blas_thread, percentile_ci

__all__ = ["EntityDraws", "PairDraws", "accuracy_interval", "entity_draws", "pair_draws"]

Answers = Mapping[tuple[str, str, str], Mapping[int, bool]]  # (train language, domain, language) -> qid -> correct


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityDraws:
    """The snapshot's entities (ascending) and the bootstrap's draws of them, (samples, entities) counts."""

    entities: np.ndarray
    weights: np.ndarray


def entity_draws(
    entities: Sequence[int], *, snapshot_id: str, seed: int, samples: int, public: Mapping[int, int] | None = None,
) -> EntityDraws:
    """The leaderboard's draws of a snapshot's entities (`Draws.weights`; `public`: store entity id -> public id,
    the order the draws are made in)."""
    ents = np.unique(np.asarray(entities, dtype=np.int64))
    if not len(ents) or samples <= 0:
        return EntityDraws(entities=ents, weights=np.zeros((0, len(ents)), dtype=np.float32))
    draws = Draws(universes={0: ents}, names={0: snapshot_id}, seed=seed, samples=samples, public=public)
    return EntityDraws(entities=ents, weights=draws.weights(0))


@dataclass(frozen=True, slots=True, kw_only=True)
class PairDraws:
    """Per draw, the contingency A/B/C/D of every (domain, pair) of one model x strategy x scorer."""

    domains: list[str]
    pairs: list[tuple[str, str]]
    sums: np.ndarray  # (samples, domains, pairs, 4)

    def per_pair(self, metric: PairMetric, domain: str) -> np.ndarray:
        """(samples, pairs): the metric of each pair on a domain, NaN where undefined."""
        return metric.ratio(PAIR_METRICS.sums_of(self.sums[:, self.domains.index(domain)]))

    def interval(self, metric: PairMetric, domain: str, keep: Sequence[tuple[str, str]]) -> tuple[float, float] | None:
        """95% interval of the mean over the pairs `keep` of the metric on a domain."""
        return _mean_interval(self.per_pair(metric, domain), self._mask(keep))

    def interval_avg(self, metric: PairMetric, domains: Sequence[str], keep: Sequence[tuple[str, str]]) -> tuple[float, float] | None:
        """95% interval of the mean over the pairs `keep` of each pair's mean over `domains` (Table 2's avg)."""
        if not domains:
            return None
        per = np.stack([self.per_pair(metric, d) for d in domains], axis=1)  # (samples, domains, pairs)
        return _mean_interval(nanmean(per, axis=1), self._mask(keep))

    def _mask(self, keep: Sequence[tuple[str, str]]) -> np.ndarray:
        wanted = set(keep)
        return np.asarray([p in wanted for p in self.pairs], dtype=bool)


def _mean_interval(per_pair: np.ndarray, mask: np.ndarray) -> tuple[float, float] | None:
    if not len(per_pair) or not mask.any():
        return None
    return percentile_ci(nanmean(np.where(mask, per_pair, np.nan)))


def pair_draws(
    answers: Answers, *, cluster_of: Mapping[int, int], draws: EntityDraws, domains: Sequence[str],
    pairs: Sequence[tuple[str, str]],
) -> PairDraws:
    """Count each entity's A/B/C/D per domain and pair (the questions answered in both languages), then sum them
    over each draw's entities."""
    pos = {int(e): i for i, e in enumerate(draws.entities.tolist())}
    n_e, n_d, n_p = len(draws.entities), len(domains), len(pairs)
    rows: list[int] = []
    for di, dom in enumerate(domains):
        for pi, (lt, ls) in enumerate(pairs):
            x, y = answers.get((lt, dom, lt), {}), answers.get((lt, dom, ls), {})
            for q in sorted(set(x) & set(y)):
                cell = 2 * (not x[q]) + (not y[q])  # A, B, C, D
                rows.append(((pos[cluster_of[q]] * n_d + di) * n_p + pi) * 4 + cell)
    counts = np.bincount(np.asarray(rows, dtype=np.int64), minlength=n_e * n_d * n_p * 4).astype(np.float32)
    with one_blas_thread():
        # float32 sums of integer counts are exact below 2**24 (as in `Draws.sums`)
        sums = (draws.weights @ counts.reshape(n_e, n_d * n_p * 4)).astype(np.float64)
    return PairDraws(domains=list(domains), pairs=list(pairs), sums=sums.reshape(len(draws.weights), n_d, n_p, 4))


def accuracy_interval(answers: Sequence[tuple[bool, int]], draws: EntityDraws) -> tuple[float, float] | None:
    """95% interval of an accuracy over (correct, entity) answers, from the draws of the entities."""
    if not len(draws.weights):
        return None
    pos = {int(e): i for i, e in enumerate(draws.entities.tolist())}
    counts = np.zeros((len(draws.entities), 2), dtype=np.float32)
    for correct, entity in answers:
        counts[pos[entity]] += (1.0, float(correct))
    s = (draws.weights @ counts).astype(np.float64)
    return percentile_ci(ratio(s[:, 1], s[:, 0]))
