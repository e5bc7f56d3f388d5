"""Agreement between two raters beyond chance: audit annotators on a verdict, or a scorer against human labels.

`cohen_kappa(a, b)`: two raters over the same items, any categories (a binary verdict, or SimpleQA's three
grades), kappa = (p_o - p_e) / (1 - p_e) with p_o the share of items they agree on and p_e the agreement their own
rates of each category predict by chance, sum_c p_a(c) p_b(c) (Cohen 1960).
`fleiss_kappa(ratings)`: any number n >= 2 of annotators, any categories, each item rated by all n (Fleiss 1971):
P_i = (sum_j n_ij^2 - n) / (n (n - 1)) per item, P_e = sum_j p_j^2 over the categories' overall shares.
Both are None where chance agreement is 1 (every verdict the same: kappa is undefined).
`kappa_interval(a, b, units)`: the 95 % percentile interval of Cohen's kappa from a bootstrap over `units` (the
items of one unit, e.g. the answers about one entity, are not independent: they are drawn together), seeded by
`seed` and `name`; the draws where kappa is undefined are left out, None when none is defined or with one unit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from clkt.snapshots.bootstrap import draw_counts

__all__ = ["BOOTSTRAP_SAMPLES", "cohen_kappa", "fleiss_kappa", "kappa_interval"]

BOOTSTRAP_SAMPLES = 1000  # kappa_interval's draws (the report's count: `clkt.report.basics.BOOTSTRAP_SAMPLES`)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    if len(a) != len(b) or not a:
        raise ValueError("Cohen's kappa needs two non-empty rating lists of the same length")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    chance = sum(k * cb[c] for c, k in ca.items()) / (n * n)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """`ratings[i]`: the verdicts of every annotator on item i (the same number for every item, at least 2)."""
    if not ratings:
        raise ValueError("Fleiss' kappa needs at least one rated pair")
    n = len(ratings[0])
    if n < 2 or any(len(r) != n for r in ratings):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of verdicts on every pair")
    per_item = []
    totals: Counter[Hashable] = Counter()
    for r in ratings:
        counts = Counter(r)
        totals.update(counts)
        per_item.append((sum(k * k for k in counts.values()) - n) / (n * (n - 1)))
    p_bar = sum(per_item) / len(ratings)
    chance = sum((k / (len(ratings) * n)) ** 2 for k in totals.values())
    return None if chance >= 1 else (p_bar - chance) / (1 - chance)


def _unit_tables(a: Sequence[Hashable], b: Sequence[Hashable], units: Sequence[Hashable]) -> np.ndarray:
    """(units, k, k): each unit's contingency table of the two raters' categories."""
    cats = {c: i for i, c in enumerate(dict.fromkeys([*a, *b]))}
    unit_ix = {u: i for i, u in enumerate(dict.fromkeys(units))}
    tables = np.zeros((len(unit_ix), len(cats), len(cats)), dtype=np.float64)
    np.add.at(tables, ([unit_ix[u] for u in units], [cats[x] for x in a], [cats[y] for y in b]), 1.0)
    return tables


def kappa_interval(
    a: Sequence[Hashable], b: Sequence[Hashable], units: Sequence[Hashable], *, seed: int, name: str,
    samples: int = BOOTSTRAP_SAMPLES,
) -> tuple[float, float] | None:
    if not len(a) == len(b) == len(units):
        raise ValueError("kappa_interval needs one unit per pair of ratings")
    tables = _unit_tables(a, b, units)
    n_units, k = tables.shape[0], tables.shape[1]
    if n_units < 2 or samples <= 0:
        return None
    weights = draw_counts(n_units, samples=samples, seed=seed, name=name)
    drawn = (weights @ tables.reshape(n_units, k * k)).reshape(samples, k, k)
    total = drawn.sum(axis=(1, 2))
    observed = np.trace(drawn, axis1=1, axis2=2) / total
    chance = (drawn.sum(axis=2) * drawn.sum(axis=1)).sum(axis=1) / (total * total)
    defined = chance < 1 - 1e-12
    kappas = (observed[defined] - chance[defined]) / (1 - chance[defined])
    if not kappas.size:
        return None
    lo, hi = np.percentile(kappas, [2.5, 97.5])
    return float(lo), float(hi)
