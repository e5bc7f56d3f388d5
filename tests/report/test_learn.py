"""Learn: exact McNemar on paired base/injected answers, Wilson intervals, and the grouping over outcomes."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from clkt.report.learn import LEARN_ALPHA, learn_stat, learn_tests, stat_from_counts
from clkt.report.metrics import Outcome
from clkt.report.stats import mcnemar_exact, wilson_ci


def test_mcnemar_exact_matches_the_binomial_on_discordant_pairs() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 * 0.5**10)  # two-sided
    assert mcnemar_exact(7, 3) == pytest.approx(binomtest(7, 10, 0.5).pvalue)
    assert mcnemar_exact(3, 7) == mcnemar_exact(7, 3)
    with pytest.raises(ValueError, match="counts must be >= 0"):
        mcnemar_exact(-1, 2)


def test_wilson_interval() -> None:
    assert wilson_ci(0, 0) is None
    lo, hi = wilson_ci(0, 10) or (None, None)
    assert lo == 0.0 and 0.25 < (hi or 0) < 0.35  # 0/10 is not "0 %": up to ~31 %
    lo, hi = wilson_ci(8, 17) or (0, 0)
    assert lo < 8 / 17 < hi
    ci = binomtest(8, 17).proportion_ci(method="wilson")
    assert (lo, hi) == pytest.approx((ci.low, ci.high), abs=1e-9)
    with pytest.raises(ValueError):
        wilson_ci(5, 3)


def test_learn_stat_counts_gain_and_significance() -> None:
    # 40 questions: 10 right before; after: those 10 stay right, 15 more become right, none lost
    pairs = [(True, True)] * 10 + [(False, True)] * 15 + [(False, False)] * 15
    s = learn_stat(pairs)
    assert (s.n, s.base_correct, s.injected_correct, s.gained, s.lost) == (40, 10, 25, 15, 0)
    assert s.gain == pytest.approx(15 / 40)
    assert s.p_value == pytest.approx(2 * 0.5**15)
    assert s.learned
    lo, hi = s.gain_ci or (0, 0)
    assert s.gain is not None and lo < s.gain < hi
    d = s.to_summary()  # what a job's summary keeps
    assert d.learned is True and d.n == 40 and (d.gained, d.lost, d.p_value, d.gain) == (15, 0, s.p_value, s.gain)


@pytest.mark.parametrize(
    "pairs",
    [
        [(False, True)] * 3 + [(False, False)] * 10,  # a gain of 3 is never significant
        [(True, False)] * 12 + [(False, False)] * 10,  # significant, but a loss
        [],  # nothing to test
    ],
)
def test_not_learned(pairs: list[tuple[bool, bool]]) -> None:
    s = learn_stat(pairs)
    assert not s.learned
    assert s.p_value >= LEARN_ALPHA or (s.gain or 0) <= 0


def _o(qid: int, lang: str, variant: str, correct: bool, *, domain: str = "music", scorer: str = "option-loglik") -> Outcome:
    return Outcome(model="m", strategy="cpt-lora", scorer=scorer, variant=variant, train_lang="en", lang=lang, qid=qid,
                   domain=domain, correct=correct)


def test_learn_tests_pair_base_and_injected_on_the_train_language_only() -> None:
    outs: list[Outcome] = []
    for q in range(20):
        dom = "music" if q < 10 else "sports"
        outs += [_o(q, "en", "base", False, domain=dom), _o(q, "en", "injected", q % 10 < 8, domain=dom)]
        outs += [_o(q, "fr", "base", True, domain=dom), _o(q, "fr", "injected", False, domain=dom)]  # not the train language
    outs.append(_o(999, "en", "injected", True))  # no base answer: not paired, not counted
    outs.append(_o(998, "en", "base", True))  # no injected answer: not counted either
    tests = {t.domain: t for t in learn_tests(outs)}
    assert set(tests) == {"music", "sports", "all"}
    real = tests["all"].stat
    assert (real.n, real.base_correct, real.injected_correct, real.gained, real.lost) == (20, 0, 16, 16, 0)
    assert tests["all"].learned and not tests["all"].control
    assert tests["music"].stat.n == 10


def test_stat_from_counts_checks_the_counts() -> None:
    s = stat_from_counts(n=10, base_correct=2, injected_correct=9, gained=7, lost=0)
    assert s.learned and s.p_value == pytest.approx(2 * 0.5**7)
    with pytest.raises(ValueError, match="inconsistent paired counts"):
        stat_from_counts(n=10, base_correct=2, injected_correct=9, gained=3, lost=0)
