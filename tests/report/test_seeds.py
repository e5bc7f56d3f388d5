"""Scores over training seeds (`clkt.report.seeds`): each seed's value, the between-seed spread, and an interval
that covers the entity sampling and the seeds (one seed: the leaderboard's own interval)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from clkt.report.leaderboard import metric_of
from clkt.report.metric_table import OVERALL
from clkt.report.pooled import Answers, Draws, Layout, boot_matrix, draw_sums, percentile_ci, pool
from clkt.report.seeds import over_seeds, total_interval
from storage.result_packs import BASE_ANSWERED, BASE_CORRECT, INJECTED_ANSWERED, INJECTED_CORRECT

LANGS = ("en", "fr", "ja")


def _job(train: str, skill: float, rng: random.Random) -> Answers:
    """60 questions of 20 entities in en, fr, ja; the injected model right in its train language with `skill`."""
    flags = []
    for _ in range(60):
        f = 0
        for pos, lang in enumerate(LANGS):
            base = rng.random() < 0.25
            inj = rng.random() < (skill if lang == train else skill - 0.3)
            f |= (1 << (INJECTED_ANSWERED + pos)) | (1 << (BASE_ANSWERED + pos))
            f |= (int(inj) << (INJECTED_CORRECT + pos)) | (int(base) << (BASE_CORRECT + pos))
        flags.append(f)
    return Answers(snapshot=0, train_lang=train, langs=LANGS, qids=np.arange(60, dtype=np.int64),
                   ents=np.arange(60, dtype=np.int64) // 3, flags=np.asarray(flags, dtype=np.uint64))


def _draws() -> Draws:
    return Draws(universes={0: np.arange(20, dtype=np.int64)}, names={0: "snap"}, seed=0, samples=400)


LAYOUT = Layout(languages=LANGS, trains=("en",))


def test_one_seed_is_the_leaderboards_own_interval() -> None:
    job = _job("en", 0.9, random.Random(1))
    draws = _draws()
    got = over_seeds({0: [job]}, LAYOUT, draws=draws)
    pooled = pool([job], LAYOUT)
    reduced = draws.sums(pooled.keys, boot_matrix(LAYOUT, pooled.counts))
    d = draw_sums(LAYOUT, np.sum(list(reduced.values()), axis=0))
    overall = got.metrics["overall"]
    assert overall.between_seed_std is None and list(overall.per_seed) == [0]
    assert overall.sampling_ci == overall.total_ci == percentile_ci(metric_of(OVERALL, d, np.ones(2, dtype=bool)))


def test_three_seeds_report_their_spread_and_an_interval_covering_it() -> None:
    rng = random.Random(2)
    by_seed = {0: [_job("en", 0.95, rng)], 1: [_job("en", 0.8, rng)], 2: [_job("en", 0.65, rng)]}
    got = over_seeds(by_seed, LAYOUT, draws=_draws())
    single = [over_seeds({s: a}, LAYOUT, draws=_draws()) for s, a in by_seed.items()]
    for key in ("overall", "transfer"):
        m = got.metrics[key]
        values = [v for v in m.per_seed.values() if v is not None]
        assert len(values) == 3 and m.mean == pytest.approx(sum(values) / 3)
        assert m.between_seed_std == pytest.approx(float(np.std(values, ddof=1)))
        assert m.sampling_ci is not None and m.total_ci is not None
        width = m.total_ci[1] - m.total_ci[0]
        assert width > m.sampling_ci[1] - m.sampling_ci[0]  # the seeds' spread is inside the total interval
        widest = max((s.metrics[key].sampling_ci or (0.0, 0.0)) for s in single)
        assert width >= widest[1] - widest[0]  # the bench's goal: at least the widest single-seed interval
    assert over_seeds(by_seed, LAYOUT, draws=_draws()) == got  # seeded: the same intervals again


def test_the_total_interval_holds_the_seeds_t_term_for_few_seeds() -> None:
    """Three seeds far apart: the pooled interval reaches at least t_{2,0.975} * sd / sqrt(3) on each side of the
    mean (a bootstrap that resamples the 3 seeds gives less), and one seed's is exactly its sampling interval."""
    rng = random.Random(3)
    by_seed = {0: [_job("en", 0.98, rng)], 1: [_job("en", 0.6, rng)], 2: [_job("en", 0.35, rng)]}
    got = over_seeds(by_seed, LAYOUT, draws=_draws())
    t2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)
    m = got.metrics["overall"]
    assert m.mean is not None and m.between_seed_std is not None and m.total_ci is not None and m.sampling_ci is not None
    seed_term = t2 * m.between_seed_std / np.sqrt(3)
    assert seed_term > 0.1  # the seeds really differ
    assert m.mean - m.total_ci[0] >= min(seed_term, m.mean) - 1e-12  # clipped at 0 only
    assert m.total_ci[1] - m.mean >= min(seed_term, 1 - m.mean) - 1e-12
    lo_half, hi_half = m.mean - m.sampling_ci[0], m.sampling_ci[1] - m.mean
    assert m.total_ci[0] == pytest.approx(max(0.0, m.mean - np.hypot(lo_half, seed_term)))
    assert m.total_ci[1] == pytest.approx(min(1.0, m.mean + np.hypot(hi_half, seed_term)))
    one = over_seeds({1: by_seed[1]}, LAYOUT, draws=_draws()).metrics["overall"]
    assert one.total_ci == one.sampling_ci and one.total_ci is not None


def test_total_interval_clips_to_the_unit_interval_and_keeps_one_seed() -> None:
    assert total_interval((0.4, 0.6), [0.5]) == (0.4, 0.6)
    lo, hi = total_interval((0.85, 0.97), [0.99, 0.9, 0.6])
    assert hi == 1.0 and 0.0 <= lo < 0.85


def test_t_quantiles_are_scipys() -> None:
    from scipy.stats import t

    from clkt.report.seeds import t975

    for df in (1, 2, 3, 5, 10, 29, 30):
        assert t975(df) == pytest.approx(float(t.ppf(0.975, df)), abs=1e-6)
    assert t975(31) == pytest.approx(1.959964)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t975(0)
