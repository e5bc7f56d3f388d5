"""Kept % on the leaderboard: each row pools its jobs' locality counts (snapshots valid for its target only),
with a bootstrap over each snapshot's locality entities; a row without any has no `kept`."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from clkt.evaluate.summary import EntityKept, LocalityCounts
from clkt.report.locality import pooled_kept
from clkt.report.window import LeaderboardQuery, load_leaderboard
from storage.engine import Store
from storage.models import GpuJob
from tests.report._window_store import LANGS, PERIODS, SPEC, seed_window_store


def _loc(per_entity: list[tuple[int, int, int]], scorer: str = "generate", lang: str = "en") -> dict[str, Any]:
    """A stored summary's `locality`: (entity, right before, kept) in one test language."""
    ents = [EntityKept(entity=e, base_right=b, kept=k) for e, b, k in per_entity]
    kept, right = sum(k for _, _, k in per_entity), sum(b for _, b, _ in per_entity)
    c = LocalityCounts(n=right + 2, kept=kept, lost=right - kept, gained=1, entities=ents)
    return {scorer: {lang: c.model_dump(mode="json")}}


def test_pooled_kept_sums_entities_over_jobs_snapshots_and_languages() -> None:
    jobs = [
        ("s1", _loc([(1, 4, 4), (2, 4, 2)])),
        ("s1", _loc([(1, 2, 1)], lang="fr")),
        ("s2", _loc([(7, 6, 6), (8, 4, 3)])),
        ("s2", {"generate": {"en": {"n": "bad"}}}),  # unreadable: left out
        ("s2", _loc([(9, 5, 0)], scorer="option-loglik")),  # another scorer
    ]
    got = pooled_kept(jobs, scorer="generate", seed=0, samples=500)
    assert got is not None and got.n == 20 and got.value == 16 / 20
    assert got.ci is not None and got.ci[0] < 0.8 < got.ci[1]
    assert pooled_kept(jobs, scorer="generate", seed=0, samples=500) == got  # seeded
    assert pooled_kept(jobs, scorer="generate", seed=0, samples=0) == got.model_copy(update={"ci": None})
    assert pooled_kept([], scorer="generate", seed=0, samples=500) is None
    # the cells' minimum holds for the pooled figure too: 8 right before about 2 entities is too few (n kept)
    few = pooled_kept([("s1", _loc([(1, 4, 4), (2, 4, 2)]))], scorer="generate", seed=0, samples=500)
    assert few is not None and (few.value, few.ci, few.n) == (None, None, 8)
    assert pooled_kept(jobs, scorer="letter-logprob", seed=0, samples=500) is None


async def test_the_leaderboard_rows_carry_kept_percent(store: Store) -> None:
    info = await seed_window_store(store)
    s1, s2, s3 = (info.snapshots[p] for p in PERIODS)
    loc = {  # (snapshot, target) -> its jobs' locality, the same for both train languages
        (s1, "alpha"): [(501, 5, 5), (502, 5, 4)], (s2, "alpha"): [(601, 10, 9)], (s3, "alpha"): [(701, 4, 2)],
        (s1, "beta"): [(501, 5, 1)], (s3, "beta"): [(701, 50, 50)],  # 2025-03 is not valid for beta: not pooled
    }
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob).order_by(col(GpuJob.id)))).scalars().all():
            if (job.snapshot_id, job.target_model) in loc:
                job.summary = {"selection_scorer": "generate", "scorers": ["generate"],
                               "locality": _loc(loc[(job.snapshot_id, job.target_model)])}
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10))
    rows = {(r.target, r.scorer): r for r in board.rows}
    alpha, beta = rows[("alpha", "generate")].kept, rows[("beta", "generate")].kept
    assert alpha is not None and (alpha.n, alpha.value) == (2 * 24, 2 * 20 / (2 * 24))  # two train languages each
    assert alpha.ci is not None and alpha.ci[0] <= alpha.value <= alpha.ci[1]
    # beta's questions right before are all about one entity (501): too few, not 20.0 with an interval of width 0
    assert beta is not None and (beta.n, beta.value, beta.ci) == (2 * 5, None, None)
    assert rows[("alpha", "option-loglik")].kept is None  # no locality counts of that scorer
    assert "kept" not in board.model_dump(mode="json")["rows"][[r.scorer for r in board.rows].index("option-loglik")]
    # `clkt leaderboard`: a kept % column in the table and the CSV, only because some job answered a locality split
    from rich.console import Console

    from clkt.cli.leaderboard import _csv, _tables

    table = next(t for t in _tables(board) if "generate" in str(t.title) and "pooled" in str(t.title))
    console = Console(width=400, record=True)
    console.print(table)
    text = console.export_text()
    assert "kept % [CI] (n right before)" in text and f"{100 * alpha.value:.1f} [" in text and "too few (n=10)" in text
    csv_rows = {(r[0], r[2]): r for r in (line.split(",") for line in _csv(board).splitlines()[1:])}
    head = _csv(board).splitlines()[0].split(",")
    assert csv_rows[("alpha", "generate")][head.index("kept_n")] == "48"
    assert csv_rows[("alpha", "option-loglik")][head.index("kept")] == ""
