"""The statistics of the report, pinned to the values they had before they moved onto scipy's `binomtest`.

Every number here is the exact float the hand-written code gave (`repr`), so a change of library or formula
that moves a single bit of a report (metrics.json keeps full precision) fails here first. McNemar's p is now the
exact fraction correctly rounded (`clkt.report.stats`): the same floats, but for (200, 170), one ulp above the
value the float sum (and scipy) gave.
"""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from clkt.report import stats
from clkt.report.metrics import Outcome, mcnemar_tests
from clkt.report.stats import mcnemar_exact, wilson_ci

# (gained, lost, two-sided exact McNemar p)
MCNEMAR = [
    (0, 0, 1.0),
    (1, 0, 1.0),
    (0, 1, 1.0),
    (1, 1, 1.0),
    (3, 7, 0.34375),
    (7, 3, 0.34375),
    (10, 0, 0.001953125),
    (0, 10, 0.001953125),
    (5, 5, 1.0),
    (12, 0, 0.00048828125),
    (20, 3, 0.00048828125),
    (50, 50, 1.0),
    (1, 30, 2.9802322387695312e-08),
    (200, 170, 0.13153652032095733),  # the exact fraction correctly rounded (scipy, and the old float sum: 1 ulp below)
]

# (k, n, Wilson 95% interval of k/n)
WILSON = [
    (0, 0, None),
    (0, 1, (0.0, 0.7934506856227626)),
    (1, 1, (0.20654931437723745, 1.0)),
    (0, 3, (5.551115123125783e-17, 0.5614970317550454)),
    (1, 3, (0.06149194472039621, 0.7923403991979522)),
    (3, 3, (0.4385029682449546, 1.0)),
    (0, 10, (0.0, 0.2775327998628892)),
    (10, 10, (0.7224672001371107, 0.9999999999999999)),
    (8, 17, (0.26165106442409436, 0.6903676493999558)),
    (17, 40, (0.28509392559950375, 0.5780493145800892)),
    (1, 5, (0.03622410863243014, 0.6244653702374747)),
    (250, 500, (0.4563412653024843, 0.5436587346975157)),
    (3, 100, (0.010254524024038925, 0.0845193642905276)),
    (999, 1000, (0.9943574414020421, 0.9998234536293739)),
]


@pytest.mark.parametrize(("gained", "lost", "p"), MCNEMAR)
def test_mcnemar_exact_keeps_its_values(gained: int, lost: int, p: float) -> None:
    assert mcnemar_exact(gained, lost) == p  # exact: no approx


@pytest.mark.parametrize(("gained", "lost", "p"), MCNEMAR)
def test_the_asymmetry_test_gives_the_same_p_as_learn(gained: int, lost: int, p: float) -> None:
    """`mcnemar_tests` (directional asymmetry) and Learn share one McNemar: None where no question differs."""
    outs: list[Outcome] = []
    for q in range(gained + lost + 2):  # + 2 concordant questions, right both ways
        fwd = q < gained or q >= gained + lost
        bwd = q >= gained
        for train, lang, right in (("en", "en", True), ("en", "fr", fwd), ("fr", "fr", True), ("fr", "en", bwd)):
            outs.append(Outcome(model="m", strategy="cpt-lora", scorer="generate", variant="injected", train_lang=train,
                                lang=lang, qid=q, domain="music", correct=right))
    (t,) = mcnemar_tests(outs, ["en", "fr"])
    assert (t.forward, t.backward) == (gained, lost)
    assert t.p_value == (None if gained + lost == 0 else p)


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="counts must be >= 0"):
        mcnemar_exact(0, -1)


@pytest.mark.parametrize(("k", "n", "ci"), WILSON)
def test_wilson_keeps_its_values(k: int, n: int, ci: tuple[float, float] | None) -> None:
    assert wilson_ci(k, n) == ci  # exact: no approx


@pytest.mark.parametrize(("k", "n", "ci"), [w for w in WILSON if w[1] > 0])
def test_wilson_is_scipys_wilson_without_continuity_correction(k: int, n: int, ci: tuple[float, float]) -> None:
    """scipy's `proportion_ci(method="wilson")` is the same interval (no continuity correction), but computed in
    another order it differs in the last bits (and clamps exactly at k = 0 and k = n), so the report keeps its
    own formula to keep every written figure identical; `wilsoncc` (continuity-corrected) is another interval."""
    got = binomtest(k, n).proportion_ci(method="wilson")
    assert (got.low, got.high) == pytest.approx(ci, abs=1e-15)
    cc = binomtest(k, n).proportion_ci(method="wilsoncc") if 0 < k < n else None
    assert cc is None or (cc.low, cc.high) != pytest.approx(ci, abs=1e-6)


@pytest.mark.parametrize(("k", "n"), [(5, 3), (-1, 4)])
def test_wilson_refuses_k_outside_0_n(k: int, n: int) -> None:
    with pytest.raises(ValueError, match=r"k must be in \[0, n\]"):
        wilson_ci(k, n)


def test_mcnemar_exact_agrees_with_scipy_on_a_grid() -> None:
    """The exact sums (every snapshot) and the saddle-point path (pooled windows) are scipy's `binomtest` to 1e-12."""
    for g in range(0, 90, 3):
        for lost in range(0, 90, 2):
            want = binomtest(g, g + lost, 0.5).pvalue if g + lost else 1.0
            assert mcnemar_exact(g, lost) == pytest.approx(want, rel=1e-12, abs=0), (g, lost)
    for g, lost in ((5000, 4800), (9000, 11000), (60000, 59000), (100000, 99000), (30000, 29950), (200000, 190000), (7000, 2)):
        assert mcnemar_exact(g, lost) == pytest.approx(binomtest(g, g + lost, 0.5).pvalue, rel=1e-12, abs=1e-300), (g, lost)


def test_the_float_path_is_the_exact_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = {(m, n - m): mcnemar_exact(m, n - m) for n in range(1, 300, 7) for m in range(n // 2 + 1)}
    monkeypatch.setattr(stats, "EXACT_MAX_N", 0)
    for (g, lost), p in exact.items():
        assert mcnemar_exact(g, lost) == pytest.approx(p, rel=1e-12, abs=0), (g, lost)
        assert mcnemar_exact(lost, g) == mcnemar_exact(g, lost)
