"""The two small statistics every report figure leans on: the exact McNemar test and the Wilson interval.

- `mcnemar_exact(gained, lost)`: the two-sided exact McNemar p, i.e. scipy's `binomtest` on the discordant
  questions (`gained` of `gained + lost`, p = 1/2); Learn (`clkt.report.learn`) and the directional
  asymmetry of Transfer (`clkt.report.metrics.mcnemar_tests`) both use it.
- `wilson_ci(k, n)`: the Wilson 95% score interval of k/n, without continuity correction. It is scipy's
  `binomtest(k, n).proportion_ci(method="wilson")` in exact arithmetic, but scipy evaluates it in another
  order: the two differ in the last bits of about half the (k, n) pairs (by at most 4e-16), and scipy clamps
  to exactly 0 and 1 at k = 0 and k = n where this formula gives 5.6e-17 or 0.9999999999999999. The report's
  `metrics.json` keeps full precision, so this formula stays, to keep every written figure identical
  (`tests/report/test_stats.py` pins both).
"""

from __future__ import annotations

import math

__all__ = ["Z95", "mcnemar_exact", "mcnemar_significant", "wilson_ci"]

Z95 = 1.959963984540054  # the 97.5% normal quantile (scipy.special.ndtri(0.975), to the last bit)


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p: binomial(gained; gained + lost, 1/2). 1.0 when no question changed."""
    if gained < 0 or lost < 0:
        raise ValueError(f"counts must be >= 0, got gained={gained}, lost={lost}")
    if gained + lost == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(gained, gained + lost, 0.5).pvalue)


def mcnemar_significant(gained: int, lost: int, alpha: float) -> bool:
    """Whether `mcnemar_exact(gained, lost) < alpha`, without scipy (the leaderboard decides it for every snapshot x
    train language). With n = gained + lost and m = min(gained, lost), the two-sided p of a fair binomial is
    2 * sum(C(n, i), i <= m) / 2**n (1 when 2m >= n). Decided by the normal approximation where it is farther from
    `alpha` than its Berry-Esseen bound, else summed in floats from the largest term down, and, only when that
    lies within 1e-9 of `alpha`, again in exact integers against `alpha` as the exact fraction it is. Agrees
    with `mcnemar_exact(...) < alpha` except where scipy's float p lies within rounding of `alpha`
    (tests/report/test_stats_significant.py checks a grid)."""
    if gained < 0 or lost < 0:
        raise ValueError(f"counts must be >= 0, got gained={gained}, lost={lost}")
    n, m = gained + lost, min(gained, lost)
    if n == 0 or 2 * m >= n:
        return alpha > 1.0
    # the normal approximation (continuity-corrected) decides when it is far from alpha: Berry-Esseen bounds each
    # tail's error by 0.4748 / sqrt(n) for a fair coin
    z = (n - 2 * m - 1) / math.sqrt(n)
    normal, bound = math.erfc(max(z, 0.0) / math.sqrt(2.0)), 2 * 0.4748 / math.sqrt(n)
    if normal - bound > alpha:
        return False
    if normal + bound < alpha:
        return True
    term = math.exp(math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) - n * math.log(2.0))
    total = term
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)
        total += term
        if term < total * 1e-18:
            break
    p = 2.0 * total
    if abs(p - alpha) > 1e-9 * alpha:
        return p < alpha
    from fractions import Fraction

    c = exact = 1
    for i in range(1, m + 1):
        c = c * (n - i + 1) // i
        exact += c
    a = Fraction(alpha)
    return 2 * exact * a.denominator < a.numerator * (1 << n)


def wilson_ci(k: int, n: int) -> tuple[float, float] | None:
    """Wilson 95% interval of k/n; None when n = 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"k must be in [0, n], got k={k}, n={n}")
    p = k / n
    den = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)
