"""The paper's tables over a window (issue 35): Table 2 per domain pooled over the window equals the report's
own Table 2 (`summarize`) on the pooled predictions, mean and std, with clkt's interval over entities beside them;
the paper's averaging of Transfer (all pairs) as an option; the size view; the directional asymmetry pooled."""

from __future__ import annotations

import random

import numpy as np
import pytest

from clkt.report.by_domain import domain_cells
from clkt.report.domain_board import load_domain_board
from clkt.report.metrics import ALL_DOMAINS, AVG_DOMAINS, mcnemar_tests, summarize
from clkt.report.pooled import Answers, Draws
from clkt.report.window import LeaderboardError, LeaderboardQuery, load_leaderboard
from storage.engine import Store
from storage.result_packs import BASE_ANSWERED, BASE_CORRECT, INJECTED_ANSWERED, INJECTED_CORRECT
from tests.report._window_store import LANGS, SPEC, seed_window_store
from tests.report.test_leaderboard import TRAINS, _hand


async def test_table2_per_domain_over_the_window_equals_the_reports_table2(store: Store) -> None:
    info = await seed_window_store(store)
    q = LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, samples=200)
    board = await load_domain_board(store, q, sizes={"alpha": ("fam", 7.0), "beta": ("fam", 1.0)})
    lb = {(r.target, r.scorer): r for r in (await load_leaderboard(store, q)).rows}
    cells = {(c.target, c.scorer, c.domain): c for c in board.cells}
    assert {d for (_, _, d) in cells} == {"movies", "music", "sports", ALL_DOMAINS, AVG_DOMAINS}
    for target, scorer in (("alpha", "generate"), ("beta", "generate"), ("alpha", "option-loglik")):
        hand = await _hand(store, info, target, scorer)
        not_learned = {(target, "cpt-lora", scorer, lt) for lt in TRAINS if lt not in hand.learned}
        table2 = {c.domain: c for c in summarize(hand.outcomes, list(LANGS), bootstrap=False, not_learned=not_learned)}
        assert set(table2) == {"movies", "music", "sports", ALL_DOMAINS, AVG_DOMAINS}
        for domain, t2 in table2.items():
            got = cells[(target, scorer, domain)]
            for key in ("overall", "transfer"):
                m = got.metrics[key]
                assert m.mean == pytest.approx(t2.values[key].mean, abs=1e-12), (target, scorer, domain, key)
                assert m.std == pytest.approx(t2.values[key].std, abs=1e-12), (target, scorer, domain, key)
                assert m.ci is not None and m.ci[0] <= m.mean <= m.ci[1]  # type: ignore[operator]
        # the `all` cell is the leaderboard's row: the same value and the same interval (the same draws)
        row, all_cell = lb[(target, scorer)], cells[(target, scorer, ALL_DOMAINS)]
        for key in ("overall", "transfer"):
            assert all_cell.metrics[key].mean == pytest.approx(row.metric(key).value, abs=1e-12)
            assert all_cell.metrics[key].ci == pytest.approx(row.metric(key).ci, abs=1e-12)
        # the directional asymmetry pooled over the window: the report's McNemar on the pooled predictions
        mine = [a for a in board.asymmetry if (a.target, a.scorer) == (target, scorer)]
        theirs = mcnemar_tests(hand.outcomes, list(TRAINS))
        assert [(a.lang_1, a.lang_2, a.forward, a.backward, a.p_value) for a in mine] == \
            [(a.lang_1, a.lang_2, a.forward, a.backward, a.p_value) for a in theirs]
    assert [(p.target, p.size_b) for p in board.sizes if p.scorer == "generate"] == [("beta", 1.0), ("alpha", 7.0)]


def _answers(train: str, rng: random.Random, *, learns: bool) -> Answers:
    """A job's test answers of 60 questions (20 entities) in en, fr, ja: `learns` or answers as its base did."""
    langs = ("en", "fr", "ja")
    flags = []
    for _ in range(60):
        f = 0
        for pos, lang in enumerate(langs):
            base = rng.random() < 0.25
            inj = (rng.random() < (0.9 if lang == train else 0.5)) if learns else base
            f |= (1 << (INJECTED_ANSWERED + pos)) | (1 << (BASE_ANSWERED + pos))
            f |= (int(inj) << (INJECTED_CORRECT + pos)) | (int(base) << (BASE_CORRECT + pos))
        flags.append(f)
    return Answers(snapshot=0, train_lang=train, langs=langs, qids=np.arange(60, dtype=np.int64),
                   ents=np.arange(60, dtype=np.int64) // 3, flags=np.asarray(flags, dtype=np.uint64))


def test_the_papers_transfer_averages_over_every_pair() -> None:
    rng = random.Random(3)
    groups = {("t", "cpt-lora", "generate"): [_answers("en", rng, learns=True), _answers("fr", rng, learns=False)]}
    domain_of = {e: ("movies", "music")[e % 2] for e in range(20)}
    draws = Draws(universes={0: np.arange(20, dtype=np.int64)}, names={0: "s"}, seed=0, samples=100)
    ours = domain_cells(groups, ["en", "fr", "ja"], domain_of=domain_of, draws=draws)
    paper = domain_cells(groups, ["en", "fr", "ja"], domain_of=domain_of, draws=draws, transfer_pairs="all")
    assert [c.domain for c in ours] == ["movies", "music", ALL_DOMAINS, AVG_DOMAINS]
    for a, b in zip(ours, paper, strict=True):
        assert a.metrics["overall"] == b.metrics["overall"]  # Overall keeps every pair either way
        assert (a.metrics["transfer"].pairs, b.metrics["transfer"].pairs) == (2, 4)  # fr did not learn: 2 pairs out
        assert (a.not_interpretable, b.not_interpretable) == (2, 0)
        assert a.metrics["transfer"].mean != b.metrics["transfer"].mean


async def test_an_unknown_window_is_one_line(store: Store) -> None:
    await seed_window_store(store)
    with pytest.raises(LeaderboardError, match="no frozen snapshot of spec 'nope'"):
        await load_domain_board(store, LeaderboardQuery(spec="nope"))
