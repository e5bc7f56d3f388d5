"""The two small statistics every report figure leans on: the exact McNemar test and the Wilson interval.

- `mcnemar_exact(gained, lost)`: the two-sided exact McNemar p, the binomial test of `gained` of `gained + lost`
  discordant questions at p = 1/2; Learn (`clkt.report.learn`), the directional asymmetry of Transfer
  (`clkt.report.metrics.mcnemar_tests`) and the leaderboard's comparisons use it. It is summed in exact integers
  (up to `EXACT_MAX_N` discordant questions, every snapshot's), so the p is the correctly rounded value of the exact
  fraction; above that (a pooled window) by Loader's saddle-point formula (relative error below
  1e-13). scipy's `binomtest` gives the same p to within 1e-12 (`tests/report/test_stats.py` pins the values and
  checks a grid): it is not used here because importing `scipy.stats` costs about a second, most of a
  `clkt leaderboard` run.
- `wilson_ci(k, n)`: the Wilson 95% score interval of k/n, without continuity correction. It is scipy's
  `binomtest(k, n).proportion_ci(method="wilson")` in exact arithmetic, but scipy evaluates it in another
  order: the two differ in the last bits of about half the (k, n) pairs (by at most 4e-16), and scipy clamps
  to exactly 0 and 1 at k = 0 and k = n where this formula gives 5.6e-17 or 0.9999999999999999. The report's
  `metrics.json` keeps full precision, so this formula stays, to keep every written figure identical
  (`tests/report/test_stats.py` pins both).
"""

from __future__ import annotations

import math

__all__ = ["EXACT_MAX_N", "Z95", "mcnemar_exact", "mcnemar_significant", "wilson_ci"]

Z95 = 1.959963984540054  # the 97.5% normal quantile (scipy.special.ndtri(0.975), to the last bit)
EXACT_MAX_N = 5_000  # discordant questions summed in exact integers (about 20 ms at the bound)


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p: binomial(gained; gained + lost, 1/2), i.e. 2 * sum(C(n, i), i <= min) / 2**n
    capped at 1. 1.0 when no question changed."""
    if gained < 0 or lost < 0:
        raise ValueError(f"counts must be >= 0, got gained={gained}, lost={lost}")
    n, m = gained + lost, min(gained, lost)
    if n == 0 or 2 * m >= n - 1:  # the lower tail holds half the mass or more
        return 1.0
    if n <= EXACT_MAX_N:
        return min(1.0, (2 * _lower_count(n, m)) / (1 << n))  # int / int: correctly rounded
    return min(1.0, 2.0 * _lower_tail(n, m))


def _lower_count(n: int, m: int) -> int:
    """sum(C(n, i), i <= m), in exact integers."""
    c = total = 1
    for i in range(1, m + 1):
        c = c * (n - i + 1) // i
        total += c
    return total


def _stirlerr(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n/e)**n), Loader's series for n > 15 (exact to rounding), else from lgamma."""
    if n <= 15:
        return math.lgamma(n + 1) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2 * math.pi)
    nn = float(n) * n
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / 1188 / nn) / nn) / nn) / nn) / n


def _bd0(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x without cancellation (Loader's deviance term)."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        s = (x - mean) * v
        ej = 2 * x * v
        for j in range(1, 1000):
            ej *= v * v
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
    return x * math.log(x / mean) + mean - x


def _lower_tail(n: int, m: int) -> float:
    """sum(C(n, i), i <= m) / 2**n (m < n/2): the largest term, the binomial probability of m, by Loader's
    saddle-point formula (C. Loader, "Fast and accurate computation of binomial probabilities", 2000: what R's
    dbinom computes; relative error below 1e-13), times the sum of the smaller terms' ratios to it in floats."""
    if m == 0:
        return math.ldexp(1.0, -n)
    half = n / 2
    log_top = _stirlerr(n) - _stirlerr(m) - _stirlerr(n - m) - _bd0(m, half) - _bd0(n - m, half)
    top = math.exp(log_top) * math.sqrt(n / (2 * math.pi * m * (n - m)))
    ratios = term = 1.0
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)
        ratios += term
        if term < ratios * 1e-18:
            break
    return top * ratios


def mcnemar_significant(gained: int, lost: int, alpha: float) -> bool:
    """Whether `mcnemar_exact(gained, lost) < alpha`, without summing every term (the leaderboard decides it for
    every snapshot x train language). With n = gained + lost and m = min(gained, lost), the two-sided p of a fair binomial is
    2 * sum(C(n, i), i <= m) / 2**n (1 when 2m >= n). Decided by the normal approximation where it is farther from
    `alpha` than its Berry-Esseen bound, else summed in floats from the largest term down, and, only when that
    lies within 1e-9 of `alpha`, again in exact integers against `alpha` as the exact fraction it is. Agrees
    with `mcnemar_exact(...) < alpha` except where that float p lies within rounding of `alpha`
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
    p = 2.0 * _lower_tail(n, m)
    if abs(p - alpha) > 1e-9 * alpha:
        return p < alpha
    from fractions import Fraction

    a = Fraction(alpha)
    return 2 * _lower_count(n, m) * a.denominator < a.numerator * (1 << n)


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
