"""The leaderboard pools what one computes by hand from the per-snapshot predictions (three snapshots, two targets,
exclusions, a snapshot valid for one target only), its bootstrap is seeded and reproducible, and rows too few to
say anything are never ranked."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import permutations

import pytest

from clkt.report.leaderboard import rank_rows
from clkt.report.leaderboard_data import Estimate, LeaderRow, LearnEstimate
from clkt.report.learn import LearnStat, learn_stat
from clkt.report.metrics import ALL_DOMAINS, Outcome, contingency, summarize
from clkt.report.window import LeaderboardQuery, load_leaderboard
from storage.engine import Store
from storage.gpu_jobs import results_for_snapshot
from tests.report._window_store import LANGS, PERIODS, SPEC, WindowStore, seed_window_store

TRAINS = ("en", "fr")


@dataclass
class Hand:
    pairs: dict[tuple[str, str], list[int]]  # A, B, C, D
    overall: float
    transfer: float | None
    learn: LearnStat
    questions: int
    outcomes: list[Outcome]
    learned: list[str]


async def _hand(store: Store, info: WindowStore, target: str, scorer: str, periods: tuple[str, ...] = PERIODS) -> Hand:
    """Overall, Transfer, Learn and every pair's A/B/C/D by hand: plain loops over the stored predictions of the
    snapshots valid for `target`, its excluded entities left out."""
    pair: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    learn_pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    outcomes: list[Outcome] = []
    questions = 0
    for period in periods:
        sid = info.snapshots[period]
        if (sid, target) not in info.ready:
            continue
        async with store.session() as s:
            rows = await results_for_snapshot(s, sid)
        excluded = info.excluded.get((sid, target), set())
        keep = [r for r in rows if r.target_model == target and r.scorer == scorer and r.split == "test"
                and info.entity_of[r.question_id] not in excluded]
        questions += len({r.question_id for r in keep})
        for lt in TRAINS:
            inj = {(r.lang, r.question_id): r.correct for r in keep if r.train_lang == lt and r.variant == "injected"}
            base = {(r.lang, r.question_id): r.correct for r in keep if r.train_lang == lt and r.variant == "base"}
            x = {q: c for (lang, q), c in inj.items() if lang == lt}
            for ls in LANGS:
                if ls == lt:
                    continue
                y = {q: c for (lang, q), c in inj.items() if lang == ls}
                t = contingency(x, y)
                for i, v in enumerate((t.a, t.b, t.c, t.d)):
                    pair[(lt, ls)][i] += v
            for q in sorted(x):
                if (lt, q) in base:
                    learn_pairs[lt].append((base[(lt, q)], x[q]))
        outcomes += [Outcome(model=target, strategy="cpt-lora", scorer=scorer, variant=r.variant, train_lang=r.train_lang, lang=r.lang,
                             qid=r.question_id, domain=r.domain, correct=r.correct, split=r.split) for r in keep]
    learned = {lt: learn_stat(v).learned for lt, v in learn_pairs.items()}
    overall = [a / (a + b + c + d) for (a, b, c, d) in pair.values() if a + b + c + d]
    transfer = [a / (a + b) for (lt, _), (a, b, _c, _d) in pair.items() if a + b and learned[lt]]
    all_learn = learn_stat([p for v in learn_pairs.values() for p in v])
    return Hand(pairs=dict(pair), overall=sum(overall) / len(overall), transfer=sum(transfer) / len(transfer) if transfer else None,
                learn=all_learn, questions=questions, outcomes=outcomes, learned=sorted(lt for lt, ok in learned.items() if ok))


async def test_pooled_numbers_equal_the_hand_computation(store: Store) -> None:
    info = await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10))
    assert [s.period for s in board.snapshots] == list(PERIODS)  # the superseded one and the other spec: never read
    assert {s.snapshot_id for s in board.snapshots} == set(info.snapshots.values())
    rows = {(r.target, r.scorer): r for r in board.rows}
    assert set(rows) == {("alpha", "generate"), ("alpha", "option-loglik"), ("beta", "generate")}
    for (target, scorer), row in rows.items():
        hand = await _hand(store, info, target, scorer)
        assert row.overall.value == pytest.approx(hand.overall, abs=1e-12)
        assert row.transfer.value == pytest.approx(hand.transfer, abs=1e-12)
        assert row.questions == hand.questions
        assert row.learned_langs == hand.learned
        lr = hand.learn
        assert (row.learn.n, row.learn.gained, row.learn.lost) == (lr.n, lr.gained, lr.lost)
        assert row.learn.injected.value == pytest.approx(lr.injected_accuracy)
        assert row.learn.p_value == pytest.approx(lr.p_value)
        got = {(p.train_lang, p.test_lang): [p.table.a, p.table.b, p.table.c, p.table.d] for p in row.pairs}
        assert got == hand.pairs
        assert row.overall.n == sum(sum(v) for v in hand.pairs.values())
        # and the same as the report's own Table 2 on the pooled predictions (its `all` cell)
        not_learned = {(target, "cpt-lora", scorer, lt) for lt in TRAINS if lt not in hand.learned}
        cell = next(c for c in summarize(hand.outcomes, list(LANGS), bootstrap=False, not_learned=not_learned)
                    if c.domain == ALL_DOMAINS)
        assert row.overall.value == pytest.approx(cell.overall_mean, abs=1e-12)
        assert row.transfer.value == pytest.approx(cell.transfer_mean, abs=1e-12)
        for col in row.per_snapshot:  # one column per snapshot, each its own hand computation
            if col.status != "ok":
                continue
            one = await _hand(store, info, target, scorer, periods=(col.period,))
            assert col.overall.value == pytest.approx(one.overall, abs=1e-12)
            assert col.transfer.value == pytest.approx(one.transfer, abs=1e-12)
            assert col.questions == one.questions
    beta = rows[("beta", "generate")]
    assert [c.status for c in beta.per_snapshot] == ["ok", "ok", "not valid"]  # 2025-03 is `probing` for beta
    assert beta.per_snapshot[1].questions == 30  # two of the 12 entities (3 questions each) excluded
    assert beta.snapshots == 2 and beta.entities == 22
    alpha = rows[("alpha", "generate")]
    assert alpha.rank == 1 and beta.rank == 2 and not alpha.tied  # the intervals separate them
    for r in board.rows:  # every figure has its n and an interval
        for e in (r.overall, r.transfer, r.learn.injected, r.learn.gain):
            assert e.n > 0 and e.ci is not None and e.ci[0] <= (e.value or 0) <= e.ci[1]


async def test_the_bootstrap_is_seeded_and_reproducible(store: Store) -> None:
    await seed_window_store(store)
    q = LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, seed=3)
    one, two = await load_leaderboard(store, q), await load_leaderboard(store, q)
    assert one.model_dump() == two.model_dump()
    other = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, seed=4))
    a, b = one.rows[0], other.rows[0]
    assert a.overall.value == b.overall.value and a.overall.ci != b.overall.ci  # the draws, not the numbers, differ
    assert one.seed == 3 and one.bootstrap == 1000


async def test_a_window_with_too_few_questions_is_never_ranked(store: Store) -> None:
    await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, period_from="2025-03", period_to="2025-03"))
    assert [s.period for s in board.snapshots] == ["2025-03"]
    (row,) = [r for r in board.rows if r.scorer == "generate"]
    assert row.target == "alpha" and row.questions == 36 < board.min_questions == 50
    assert row.too_few and row.rank is None
    assert any("target beta" in n and "not `ready`" in n for n in board.notes)  # valid nowhere in the window
    # what the empty parts need is said where they show (the demo's board: one target, one snapshot, too few)
    assert any(n.startswith("one target (alpha)") and "--compare" in n for n in board.notes)
    assert any(n.startswith("one snapshot in the window") for n in board.notes)
    assert any("too few to rank" in n and "--from/--to" in n for n in board.notes)


async def test_a_full_window_asks_for_nothing(store: Store) -> None:
    await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10))
    assert len(board.snapshots) > 1 and len({r.target for r in board.rows}) > 1
    assert not [n for n in board.notes if n.startswith(("one target", "one snapshot", "every row"))]


def _row(target: str, value: float, ci: tuple[float, float], *, too_few: bool = False) -> LeaderRow:
    e = Estimate(value=value, ci=ci, n=100)
    return LeaderRow(target=target, strategy="s", scorer="g", snapshots=1, questions=100, entities=10, train_langs=["en"],
                     learned_langs=["en"], overall=e, transfer=e, not_interpretable=0, too_few=too_few,
                     learn=LearnEstimate(n=1, base=0.2, injected=e, gain=e, gained=1, lost=0, p_value=0.5, learned=True))


def test_a_ranking_the_intervals_do_not_support_is_a_tie() -> None:
    rows = rank_rows([_row("c", 0.40, (0.35, 0.44)), _row("a", 0.60, (0.55, 0.65)), _row("b", 0.50, (0.45, 0.58)),
                      _row("tiny", 0.99, (0.9, 1.0), too_few=True)])
    got = [(r.target, r.rank, r.tied) for r in rows]
    # b's interval reaches a's: they share rank 1; both lie above c's
    assert got == [("a", 1, True), ("b", 1, True), ("c", 3, False), ("tiny", None, False)]


async def test_the_pairs_of_the_window_are_the_heatmap(store: Store) -> None:
    await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, targets=("alpha",)))
    assert {r.target for r in board.rows} == {"alpha"}
    row = next(r for r in board.rows if r.scorer == "generate")
    assert [(p.train_lang, p.test_lang) for p in row.pairs] == [(lt, ls) for lt, ls in permutations(LANGS, 2) if lt in TRAINS]
    for p in row.pairs:
        assert p.reading == "ok" and p.transfer.n == p.table.a + p.table.b and p.transfer.ci is not None
