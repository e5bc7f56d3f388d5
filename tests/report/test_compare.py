"""The paired comparison of two targets: on the questions valid for both, with a paired bootstrap interval and
exact McNemar; identical predictions give no difference and a tie."""

from __future__ import annotations

from sqlmodel import col, select

from clkt.report.window import LeaderboardQuery, load_leaderboard
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, write_job_results
from storage.models import GpuJob, QuestionResult
from tests.report._window_store import LANGS, SPEC, seed_window_store


async def _copy_alpha_to_beta(store: Store) -> None:
    """Beta answers exactly as alpha does (the generate scorer), in every job."""
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob))).scalars().all()
        by = {(j.snapshot_id, j.target_model, j.train_lang): j.id for j in jobs}
        for (sid, target, lt), job_id in by.items():
            if target != "beta":
                continue
            rows = (await s.execute(select(QuestionResult).where(col(QuestionResult.job_id) == by[(sid, "alpha", lt)],
                                                                  col(QuestionResult.scorer) == "generate"))).scalars().all()
            assert job_id is not None
            await write_job_results(s, job_id, [ResultRecord(question_id=r.question_id, lang=r.lang, variant=r.variant, scorer=r.scorer,
                                                             split=r.split, predicted=r.predicted, correct=r.correct) for r in rows])


async def test_identical_predictions_give_no_difference(store: Store) -> None:
    await seed_window_store(store)
    await _copy_alpha_to_beta(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, compare=("alpha", "beta"), min_questions=10))
    c = board.comparison
    assert c is not None and (c.scorer_a, c.scorer_b) == ("generate", "generate")
    assert c.questions == 66 and c.entities == 22 and len(c.snapshots) == 2  # 2025-03 is not valid for beta; 2 entities excluded
    assert c.lines and {ln.metric for ln in c.lines} == {"Overall", "Transfer", "Learn"}
    for ln in c.lines:
        assert ln.a.value == ln.b.value
        assert ln.diff.value == 0.0 and ln.diff.ci == (0.0, 0.0)
        assert ln.a_only == ln.b_only == 0 and ln.p_value == 1.0
        assert ln.verdict == "tie"


async def test_a_real_difference_has_its_interval_and_mcnemar(store: Store) -> None:
    await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, compare=("alpha", "beta"), min_questions=10))
    c = board.comparison
    assert c is not None
    overall = next(ln for ln in c.lines if (ln.metric, ln.scope) == ("Overall", "all pairs"))
    assert overall.verdict == "alpha" and overall.diff.ci is not None and overall.diff.ci[0] > 0
    assert overall.a_only > overall.b_only and overall.p_value is not None and overall.p_value < 1e-6
    # alpha's value on the common questions: its own pooled Overall restricted to the snapshots valid for beta
    two = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, period_to="2025-02", min_questions=10))
    beta = next(r for r in two.rows if (r.target, r.scorer) == ("beta", "generate"))
    assert overall.b.value == beta.overall.value  # beta answered exactly the common questions
    into = [ln for ln in c.lines if ln.scope.startswith("into ")]
    assert {ln.scope for ln in into} == {"into en", "into fr", "into ja"}  # "which transfers better into Japanese?"
    assert sum(ln.diff.n for ln in into if ln.metric == "Overall") == overall.diff.n == c.question_pairs
    # the same comparison, the other way round, mirrors it
    back = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, compare=("beta", "alpha"), min_questions=10))
    assert back.comparison is not None
    rev = next(ln for ln in back.comparison.lines if (ln.metric, ln.scope) == ("Overall", "all pairs"))
    assert rev.diff.value == -overall.diff.value if overall.diff.value is not None else False
    assert (rev.a_only, rev.b_only) == (overall.b_only, overall.a_only) and rev.verdict == "alpha"
