"""Agreement between audit annotators on a binary verdict (a pair is correct or not), beyond chance.

`cohen_kappa(a, b)`: two annotators over the same pairs, kappa = (p_o - p_e) / (1 - p_e) with p_o the share of
pairs they agree on and p_e the agreement their own rates of "correct" predict by chance (Cohen 1960).
`fleiss_kappa(ratings)`: any number n >= 2 of annotators, each pair rated by all n (Fleiss 1971): P_i =
(sum_j n_ij^2 - n) / (n (n - 1)) per pair, P_e = sum_j p_j^2 over the categories' overall shares.
Both are None where chance agreement is 1 (every verdict the same: kappa is undefined).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["cohen_kappa", "fleiss_kappa"]


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    if len(a) != len(b) or not a:
        raise ValueError("Cohen's kappa needs two non-empty rating lists of the same length")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


def fleiss_kappa(ratings: Sequence[Sequence[bool]]) -> float | None:
    """`ratings[i]`: the verdicts of every annotator on pair i (the same number for every pair, at least 2)."""
    if not ratings:
        raise ValueError("Fleiss' kappa needs at least one rated pair")
    n = len(ratings[0])
    if n < 2 or any(len(r) != n for r in ratings):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of verdicts on every pair")
    per_pair = []
    yes_total = 0
    for r in ratings:
        yes = sum(r)
        yes_total += yes
        per_pair.append((yes * yes + (n - yes) * (n - yes) - n) / (n * (n - 1)))
    p_bar = sum(per_pair) / len(ratings)
    p_yes = yes_total / (len(ratings) * n)
    chance = p_yes * p_yes + (1 - p_yes) * (1 - p_yes)
    return None if chance >= 1 else (p_bar - chance) / (1 - chance)
