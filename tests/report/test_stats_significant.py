"""`mcnemar_significant` decides `mcnemar_exact(g, l) < alpha` exactly, without scipy: the same answer on a grid."""

from __future__ import annotations

import pytest

from clkt.report.stats import mcnemar_exact, mcnemar_significant


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_the_same_decision_as_the_exact_p(alpha: float) -> None:
    for g in range(61):
        for lost in range(61):
            assert mcnemar_significant(g, lost, alpha) == (mcnemar_exact(g, lost) < alpha), (g, lost, alpha)
    for g, lost in ((400, 330), (5000, 4800), (120, 0), (0, 0)):
        assert mcnemar_significant(g, lost, alpha) == (mcnemar_exact(g, lost) < alpha), (g, lost)


def test_bad_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_significant(-1, 2, 0.05)
