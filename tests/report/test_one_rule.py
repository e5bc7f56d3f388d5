"""The one learned rule over training seeds (issue 45 item 1): three seeds at 8 gained / 2 lost each (no seed learns
alone, exact McNemar p = 0.11 each) pool to p = 0.0014: the row learned, so its headline Transfer has a value, its
heatmap cell reads `ok`, every seed's Transfer keeps that pair, and the per-domain board agrees. The rule before
(learned only where every seed learned) left the headline `n/a` beside an `ok` heatmap cell."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from clkt.report.by_domain import domain_cells
from clkt.report.leaderboard import build_rows, group_answers, window_draws
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.stats import mcnemar_exact
from storage.leaderboard import WindowData, WindowJob, WindowSnapshot
from storage.result_packs import PackedAnswer, build_packs

QUESTIONS = 30  # 10 entities x 3


def _answers(seed: int) -> list[PackedAnswer]:
    """Base right on q0-q9, injected right on q2-q17 in en (8 gained, 2 lost); in fr injected right on q2-q13."""
    out = []
    for q in range(QUESTIONS):
        ent = 1 + q // 3
        out += [PackedAnswer(question_id=100 + q, entity_id=ent, lang="en", variant="base", scorer="generate", correct=q < 10),
                PackedAnswer(question_id=100 + q, entity_id=ent, lang="en", variant="injected", scorer="generate",
                             correct=2 <= q < 18),
                PackedAnswer(question_id=100 + q, entity_id=ent, lang="fr", variant="base", scorer="generate", correct=False),
                PackedAnswer(question_id=100 + q, entity_id=ent, lang="fr", variant="injected", scorer="generate",
                             correct=2 <= q < 14 - seed)]
    return out


def _data() -> WindowData:
    snap = WindowSnapshot(id="s-2025-01", spec="x", period="2025-01", built_at=datetime(2025, 2, 1, tzinfo=UTC))
    jobs = tuple(WindowJob(id=1 + seed, snapshot_id=snap.id, target="t", strategy="cpt-lora", train_lang="en", seed=seed)
                 for seed in range(3))
    packs = tuple(p for j in jobs for p in build_packs(j.id, _answers(j.seed)))
    return WindowData(snapshots=(snap,), ready=frozenset({(snap.id, "t")}), exclusions={}, jobs=jobs, packs=packs,
                      public_entities={e: 1000 + e for e in range(1, 11)})


def test_seeds_that_learn_together_learn_in_every_view() -> None:
    assert mcnemar_exact(8, 2) > 0.05 and mcnemar_exact(24, 6) < 0.002  # no seed alone; the three together
    data = _data()
    (row,) = build_rows(data, ["en", "fr"], samples=200, min_questions=0)
    assert row.seeds == [0, 1, 2] and row.learned_langs == ["en"] and row.learn.learned
    assert (row.learn.gained, row.learn.lost) == (24, 6) and row.learn.p_value == mcnemar_exact(24, 6)
    (pair,) = row.pairs
    assert pair.reading == "ok" and row.not_interpretable == 0
    per = (row.per_seed or {})["transfer"]
    assert all(per[s] == (12 - s) / 16 for s in range(3))  # every seed keeps the pair: A / (A+B) with A+B = 16
    transfer = row.metric("transfer")
    assert transfer.value == np.mean([per[s] for s in range(3)]) and transfer.ci is not None
    # the per-domain board (Table 2 over the window): the same rule, the same figure
    draws = window_draws(data, seed=0, samples=200)
    cells = domain_cells(group_answers(data), ["en", "fr"], domain_of={}, draws=draws)
    (all_cell,) = [c for c in cells if c.domain == ALL_DOMAINS]
    assert all_cell.not_interpretable == 0
    assert (all_cell.metrics["transfer"].mean, all_cell.metrics["transfer"].ci) == (transfer.value, transfer.ci)
