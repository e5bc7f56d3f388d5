"""Two strategies of one target compared on the same questions (`clkt.report.strategy_compare`): the paired
figures equal a recomputation from the stored per-question results, the comparison mirrors when the strategies
swap, and every bad input is refused with one line."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from sqlalchemy import delete
from sqlmodel import col, select

from clkt.report.leaderboard_data import LeaderboardError, StrategyComparison
from clkt.report.pooled import Draws, percentile_ci
from clkt.report.stats import mcnemar_exact
from clkt.report.strategy_compare import parse_strategy_pair
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.snapshots.ids import stable_entity_id
from storage.engine import Store
from storage.models import GpuJob, LeaseStatus, QuestionResult
from storage.snapshots import entity_identities
from tests.report._strategy_store import seed_strategy_store
from tests.report._window_store import LANGS, PERIODS, SPEC, WindowStore

SAMPLES = 200
PAIR = ("cpt-lora", "memit")

Answers = dict[tuple[int, str, str], bool]  # (question, lang, variant) -> correct


def _query(**kw: object) -> LeaderboardQuery:
    args: dict[str, object] = dict(spec=SPEC, languages=LANGS, compare_strategies=PAIR, targets=("alpha",), min_questions=10,
                                   samples=SAMPLES)
    args.update(kw)
    return LeaderboardQuery(**args)  # type: ignore[arg-type]


async def _stored(store: Store, seed: int = 0) -> dict[tuple[str, str, str], Answers]:
    """alpha's generate answers of the test split per (strategy, snapshot, train language) of the jobs of training
    seed `seed`, from `question_result`."""
    out: dict[tuple[str, str, str], Answers] = defaultdict(dict)
    async with store.session() as s:
        jobs = {j.id: j for j in (await s.execute(select(GpuJob).where(col(GpuJob.target_model) == "alpha",
                                                                       col(GpuJob.status) == LeaseStatus.done,
                                                                       col(GpuJob.seed) == seed))).scalars()}
        rows = (await s.execute(select(QuestionResult).where(col(QuestionResult.job_id).in_(list(jobs)),
                                                             col(QuestionResult.scorer) == "generate",
                                                             col(QuestionResult.split) == "test"))).scalars().all()
    for r in rows:
        j = jobs[r.job_id]
        out[(j.strategy, j.snapshot_id, j.train_lang)][(r.question_id, r.lang, r.variant)] = bool(r.correct)
    return out


def _recompute(stored: dict[tuple[str, str, str], Answers], info: WindowStore) -> dict[str, object]:
    """The comparison's figures counted by hand: Learn (injected, both answered in the train language), Overall per
    language pair (both answered in both languages), base -> injected per strategy, per-entity Learn counts."""
    learn_n = ra = rb = a_only = b_only = 0
    pair_cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])  # valid, A for a, A for b
    base = {s: [0, 0, 0, 0, 0] for s in PAIR}  # n, base right, injected right, gained, lost
    per_entity: dict[tuple[str, int], np.ndarray] = defaultdict(lambda: np.zeros(3))
    for period in PERIODS:
        sid = info.snapshots[period]
        for lt in ("en", "fr"):
            xa, xb = stored[(PAIR[0], sid, lt)], stored[(PAIR[1], sid, lt)]
            for q in sorted({k[0] for k in xa} & {k[0] for k in xb}):
                inj = [(x.get((q, lt, "injected"))) for x in (xa, xb)]
                if None in inj:
                    continue
                learn_n += 1
                ra, rb = ra + inj[0], rb + inj[1]
                a_only, b_only = a_only + (inj[0] and not inj[1]), b_only + (inj[1] and not inj[0])
                per_entity[(sid, info.entity_of[q])] += [1, inj[0], inj[1]]
                if (q, lt, "base") in xa and (q, lt, "base") in xb:
                    for name, x in zip(PAIR, (xa, xb), strict=True):
                        b, i = x[(q, lt, "base")], x[(q, lt, "injected")]
                        base[name] = [v + d for v, d in zip(base[name], [1, b, i, not b and i, b and not i], strict=True)]
                for ls in LANGS:
                    got = [x.get((q, ls, "injected")) for x in (xa, xb)]
                    if ls == lt or None in got:
                        continue
                    c = pair_cells[(lt, ls)]
                    c[0], c[1], c[2] = c[0] + 1, c[1] + (inj[0] and bool(got[0])), c[2] + (inj[1] and bool(got[1]))
    overall = [float(np.mean([c[k] / c[0] for c in pair_cells.values()])) for k in (1, 2)]
    return dict(learn=(learn_n, ra, rb, a_only, b_only), overall=overall, units=sum(c[0] for c in pair_cells.values()),
                base=base, per_entity=per_entity)


def _learn_diff_ci(
    per_entity: dict[tuple[str, int], np.ndarray], info: WindowStore, public: dict[int, int],
) -> tuple[float, float] | None:
    """Learn's a - b interval from the window's draws (the same seed, the same entities of each snapshot, drawn in
    the order of their public ids)."""
    sids = [info.snapshots[p] for p in PERIODS]
    universes = {i: np.asarray(sorted({e for q, e in info.entity_of.items() if (e - 1) // 12 == i}), dtype=np.int64)
                 for i in range(len(sids))}
    draws = Draws(universes=universes, names=dict(enumerate(sids)), seed=0, samples=SAMPLES, public=public)
    total = np.zeros((SAMPLES, 3))
    for i, sid in enumerate(sids):
        counts = np.stack([per_entity.get((sid, int(e)), np.zeros(3)) for e in universes[i]])
        total += draws.weights(i).astype(np.float64) @ counts
    return percentile_ci(total[:, 1] / total[:, 0] - total[:, 2] / total[:, 0])


async def _comparison(store: Store, q: LeaderboardQuery) -> StrategyComparison:
    board = await load_leaderboard(store, q)
    assert board.strategy_comparison is not None
    return board.strategy_comparison


async def test_paired_figures_equal_a_recomputation_from_the_stored_results(store: Store) -> None:
    info = await seed_strategy_store(store)
    c = await _comparison(store, _query())
    want = _recompute(await _stored(store), info)
    n, ra, rb, a_only, b_only = want["learn"]  # type: ignore[misc]
    learn = next(ln for ln in c.lines if ln.metric == "Learn")
    assert (c.target, c.scorer, learn.diff.n) == ("alpha", "generate", n) and n > 100
    assert learn.a.value == pytest.approx(ra / n) and learn.b.value == pytest.approx(rb / n)
    assert (learn.a_only, learn.b_only) == (a_only, b_only) and learn.p_value == pytest.approx(mcnemar_exact(a_only, b_only))
    async with store.session() as s:
        ids = await entity_identities(s, sorted(set(info.entity_of.values())))
    public = {e: stable_entity_id(src, ext) for e, (src, ext) in ids.items()}
    assert len(public) == len(set(info.entity_of.values()))
    assert learn.diff.ci == pytest.approx(_learn_diff_ci(want["per_entity"], info, public))  # type: ignore[arg-type]
    overall = next(ln for ln in c.lines if (ln.metric, ln.scope) == ("Overall", "all pairs"))
    assert [overall.a.value, overall.b.value] == pytest.approx(want["overall"])
    assert overall.diff.n == c.question_pairs == want["units"]
    for name, le in zip(PAIR, c.learn, strict=True):
        bn, bc, ic, g, lo = want["base"][name]  # type: ignore[index]
        assert (le.n, le.gained, le.lost) == (bn, g, lo)
        assert le.base == pytest.approx(bc / bn) and le.injected.value == pytest.approx(ic / bn)
        assert le.p_value == pytest.approx(mcnemar_exact(g, lo))
    assert c.learn[1].learned and c.learn[1].gain.ci is not None and c.learn[1].gain.ci[0] > 0
    assert len(c.snapshots) == 3 and c.entities == 36 and not c.too_few


async def test_the_comparison_mirrors_when_the_strategies_swap(store: Store) -> None:
    await seed_strategy_store(store)
    c = await _comparison(store, _query())
    back = await _comparison(store, _query(compare_strategies=PAIR[::-1]))
    assert [ln.scope for ln in c.lines] == [ln.scope for ln in back.lines] and len(c.lines) >= 3 + 2 * len(LANGS)
    for x, y in zip(c.lines, back.lines, strict=True):
        assert (x.a, x.b, x.a_only, x.b_only, x.p_value) == (y.b, y.a, y.b_only, y.a_only, y.p_value)
        assert x.diff.value == pytest.approx(-(y.diff.value or 0.0)) if x.diff.value is not None else y.diff.value is None
    transfer = next(ln for ln in c.lines if (ln.metric, ln.scope) == ("Transfer", "all pairs"))
    assert transfer.verdict == "cpt-lora"  # memit learns its train language but transfers worse


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        (dict(compare_strategies=("cpt-lora", "magic")), "unknown strategy 'magic'; known: cpt-lora, full-ft, memit, sft-facts-lora, sft-lora"),
        (dict(compare_strategies=("memit", "memit")), "--compare-strategies needs two different strategies, got 'memit' twice"),
        (dict(compare_strategies=("cpt-lora", "sft-lora")), "cpt-lora and sft-lora share no question for target alpha"),
        (dict(targets=("beta",)), "target beta has results of cpt-lora only, not of memit, in the window"),
        (dict(targets=()), "--compare-strategies: several targets have results of cpt-lora or memit (alpha, beta); name one"),
        (dict(targets=("alpha", "beta")), "--compare-strategies compares one target: name one --target"),
        (dict(strategy="memit"), "--strategy with --compare-strategies: choose one"),
        (dict(scorer="option-loglik"), "target alpha has results of cpt-lora only, not of memit, in the window scored option-loglik"),
    ],
)
async def test_bad_inputs_are_refused_with_one_line(store: Store, kw: dict[str, object], says: str) -> None:
    await seed_strategy_store(store)
    with pytest.raises(LeaderboardError) as e:
        await load_leaderboard(store, _query(**kw))
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("value", ["memit", "a,b,c", "memit,", ",memit"])
def test_a_pair_is_two_names(value: str) -> None:
    with pytest.raises(LeaderboardError, match="expected two strategies as A,B"):
        parse_strategy_pair(value)
    assert parse_strategy_pair(" cpt-lora , memit ") == ("cpt-lora", "memit")


async def test_each_strategys_kept_percent_rides_beside_its_learn_and_shows_only_when_there(store: Store) -> None:
    """kept % is each strategy's own row's (its jobs' locality questions, not paired): none in this store, so the
    comparison has no kept column; given rows with kept, the comparison takes each strategy's and the CLI shows it."""
    from clkt.cli.leaderboard_strategies import strategy_tables
    from clkt.report.leaderboard_data import Estimate
    from clkt.report.strategy_compare import _kept

    await seed_strategy_store(store)
    board = await load_leaderboard(store, _query())
    c = board.strategy_comparison
    assert c is not None and c.kept == [None, None]
    assert "kept" not in " ".join(str(col.header) for col in strategy_tables(c)[0].columns)
    assert "kept" not in c.model_dump()  # left out of the JSON when no strategy has one
    memit = Estimate(value=0.8, ci=(0.7, 0.9), n=40)
    rows = [r.model_copy(update={"kept": memit}) if (r.strategy, r.target) == ("memit", "alpha") else r for r in board.rows]
    assert _kept(rows, "alpha", c.scorer, PAIR) == [None, memit]
    table = strategy_tables(c.model_copy(update={"kept": [None, memit]}))[0]
    assert "kept % [CI]" in str(table.columns[-1].header)
    assert list(table.columns[-1].cells) == ["n/a", "80.0 [70.0, 90.0] (40)"]


async def _add_seed_one(store: Store, info: WindowStore) -> None:
    """A seed-1 job of alpha's cpt-lora and memit per snapshot and train language (en, fr), stored after the
    seed-0 jobs (a later id) and answering as a weaker model: its answers differ from seed 0's."""
    import random

    from storage.gpu_jobs import enqueue_gpu_jobs, write_job_results
    from tests.report._window_store import _records

    rng = random.Random(5)
    async with store.transaction() as s:
        for sid in info.snapshots.values():
            await enqueue_gpu_jobs(s, snapshot_id=sid, targets=["alpha"], strategies=list(PAIR), train_langs=["en", "fr"],
                                   max_attempts=1, seeds=[0, 1])  # seed 0 is there: only seed 1 is new
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.seed) == 1).order_by(col(GpuJob.id)))).scalars().all()
        assert len(jobs) == 2 * 2 * len(PERIODS)
        for job in jobs:
            assert job.id is not None
            at = list(info.snapshots.values()).index(job.snapshot_id)
            qids = sorted(q for q, e in info.entity_of.items() if (e - 1) // 12 == at)
            await write_job_results(s, job.id, _records(rng, "beta", job.train_lang, qids, ("generate",)))
            job.status, job.attempts = LeaseStatus.done, 1


def _mix(a: dict[tuple[str, str, str], Answers], b: dict[tuple[str, str, str], Answers]) -> dict[tuple[str, str, str], Answers]:
    """Strategy a's answers of one seed beside strategy b's of another: one run of the comparison."""
    return {k: v for k, v in a.items() if k[0] == PAIR[0]} | {k: v for k, v in b.items() if k[0] == PAIR[1]}


async def test_two_seeds_compare_by_the_rows_rule_over_seeds(store: Store) -> None:
    """Each strategy with seeds 0 and 1 (seed 1 answering otherwise): each side's Learn is on both its seeds' answers
    together (each seed on the questions it and the other side's lowest seed answered) and its Overall the mean of
    its seeds' values (the rows' rule, `clkt.report.metric_table`), the difference that of the means; McNemar pairs
    the seeds by rank; the interval holds the difference."""
    info = await seed_strategy_store(store)
    before = await _comparison(store, _query())
    await _add_seed_one(store, info)
    after = await _comparison(store, _query())
    a0, a1 = await _stored(store, seed=0), await _stored(store, seed=1)
    r00, r11, r10, r01 = (_recompute(m, info) for m in (a0, a1, _mix(a1, a0), _mix(a0, a1)))
    (n00, ra00, rb00, ao00, bo00), (n11, _, _, ao11, bo11) = r00["learn"], r11["learn"]  # type: ignore[misc]
    (n10, ra10, _, _, _), (n01, _, rb01, _, _) = r10["learn"], r01["learn"]  # type: ignore[misc]
    assert r11["learn"] != r00["learn"]  # seed 1's answers differ
    learn = next(ln for ln in after.lines if ln.metric == "Learn")
    assert (learn.a.n, learn.b.n, learn.diff.n) == (n00 + n10, n00 + n01, n00 + n11)
    assert learn.a.value == pytest.approx((ra00 + ra10) / (n00 + n10))
    assert learn.b.value == pytest.approx((rb00 + rb01) / (n00 + n01))
    assert (learn.a_only, learn.b_only) == (ao00 + ao11, bo00 + bo11)
    overall = next(ln for ln in after.lines if ln.metric == "Overall" and ln.scope == "all pairs")
    oa = (r00["overall"][0] + r10["overall"][0]) / 2  # type: ignore[index]
    ob = (r00["overall"][1] + r01["overall"][1]) / 2  # type: ignore[index]
    assert (overall.a.value, overall.b.value, overall.diff.value) == (pytest.approx(oa), pytest.approx(ob),
                                                                       pytest.approx(oa - ob))
    one = next(ln for ln in before.lines if ln.metric == "Overall" and ln.scope == "all pairs")
    assert one.a.value == pytest.approx(r00["overall"][0])  # type: ignore[index]  # seed 0 alone, before seed 1 ran
    assert overall.diff.ci is not None and overall.diff.ci[0] <= overall.diff.value <= overall.diff.ci[1]
    assert any(f"training seeds: {PAIR[0]} 0, 1, {PAIR[1]} 0, 1;" in x for x in after.notes)


async def test_a_strategy_with_more_seeds_is_read_by_its_rows_rule(store: Store) -> None:
    """Seed 1 of memit removed: cpt-lora (seeds 0, 1) is read over both its seeds, memit over seed 0 alone; memit's
    figures are those before seed 1 ran, and a note names each side's seeds."""
    info = await seed_strategy_store(store)
    before = await _comparison(store, _query())
    await _add_seed_one(store, info)
    async with store.transaction() as s:
        await s.execute(delete(GpuJob).where(col(GpuJob.seed) == 1, col(GpuJob.strategy) == PAIR[1]))
    after = await _comparison(store, _query())
    for old, new in zip(before.lines, after.lines, strict=True):
        assert (new.metric, new.scope, new.b) == (old.metric, old.scope, old.b)  # memit: seed 0 alone, as before
    a0, a1 = await _stored(store, seed=0), await _stored(store, seed=1)
    r00, r10 = _recompute(a0, info), _recompute(_mix(a1, a0), info)
    overall = next(ln for ln in after.lines if ln.metric == "Overall" and ln.scope == "all pairs")
    assert overall.a.value == pytest.approx((r00["overall"][0] + r10["overall"][0]) / 2)  # type: ignore[index]
    assert any(f"training seeds: {PAIR[0]} 0, 1, {PAIR[1]} 0;" in x for x in after.notes)
