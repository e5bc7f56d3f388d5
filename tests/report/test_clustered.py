"""The report's intervals are over entities (a clustered bootstrap) and a figure that appears twice is the same
number: the summary's Transfer is Table 2's `all pooled` cell, and a snapshot's pooled Overall and Transfer
carry the same value and interval in its report and on a leaderboard of that snapshot."""

from __future__ import annotations

import pytest

from clkt.report.clustered import entity_draws
from clkt.report.data import in_short
from clkt.report.learn import learn_tests
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS, Outcome, base_accuracy, summarize
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.report.writer import load_report_data
from storage.engine import Store
from tests.report._window_store import LANGS, PERIODS, SPEC, seed_window_store


def _outcomes(copies: int) -> list[Outcome]:
    """12 entities, trained in en, tested in fr; each entity's `copies` questions all answered alike."""
    out: list[Outcome] = []
    for e in range(12):
        right_en, right_fr = e % 4 != 0, e % 3 == 0
        for k in range(copies):
            qid = 100 * e + k
            for lang, right in (("en", right_en), ("fr", right_fr)):
                out.append(Outcome(model="m", strategy="s", scorer="x", variant="injected", train_lang="en", lang=lang,
                                   qid=qid, domain="d", correct=right, entity=e + 1))
    return out


def test_the_questions_of_an_entity_are_drawn_together() -> None:
    """Three copies of every entity's question are no more evidence than one: the interval is the same (a
    bootstrap over questions would narrow it by about sqrt(3))."""
    one = {c.domain: c for c in summarize(_outcomes(1), ["en", "fr"], snapshot_id="s")}
    three = {c.domain: c for c in summarize(_outcomes(3), ["en", "fr"], snapshot_id="s")}
    for key in PAIR_METRICS.ordered_keys():
        a, b = one[ALL_DOMAINS].metric(key), three[ALL_DOMAINS].metric(key)
        assert a.mean == b.mean and a.ci is not None
        assert b.ci == pytest.approx(a.ci, abs=1e-12)
        assert a.ci[1] - a.ci[0] > 0.1  # 12 entities: a wide interval


def test_learn_s_intervals_are_over_entities() -> None:
    """Learn's accuracies and gain: three copies of each entity's question give the intervals of one."""

    def tests(copies: int) -> list[tuple[float, float] | None]:
        outs = [o for o in _outcomes(copies) if o.lang == "en"]
        outs += [Outcome(model="m", strategy="s", scorer="x", variant="base", train_lang="en", lang="en", qid=o.qid, domain="d",
                         correct=o.entity is not None and o.entity % 5 == 0, entity=o.entity) for o in outs]
        draws = entity_draws([o.cluster for o in outs], snapshot_id="s", seed=0, samples=1000)
        (t, _) = learn_tests(outs, draws=draws)  # the domain and `all`
        assert t.stat.clustered is not None
        return [t.stat.base_ci, t.stat.injected_ci, t.stat.gain_ci]

    one, three = tests(1), tests(3)
    assert all(ci is not None for ci in one)
    for a, b in zip(one, three, strict=True):
        assert b == pytest.approx(a, abs=1e-12)


def test_the_base_model_s_interval_is_over_entities() -> None:
    def ci(copies: int) -> tuple[float, float] | None:
        outs = [Outcome(model="m", strategy="s", scorer="x", variant="base", train_lang="en", lang=o.lang, qid=o.qid,
                        domain="d", correct=o.correct, entity=o.entity) for o in _outcomes(copies)]
        draws = entity_draws([o.cluster for o in outs], snapshot_id="s", seed=0, samples=1000)
        (en, _) = base_accuracy(outs, draws=draws)
        assert en.lang == "en" and en.n == 12 * copies
        return en.ci

    one = ci(1)
    assert one is not None and one[1] - one[0] > 0.2
    assert ci(3) == pytest.approx(one, abs=1e-12)


async def test_a_snapshot_s_figures_are_the_same_in_its_report_and_on_the_leaderboard(store: Store) -> None:
    info = await seed_window_store(store)
    period = PERIODS[0]  # both targets valid, nothing excluded
    data = await load_report_data(store, info.snapshots[period])
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, period_from=period, period_to=period,
                                                           min_questions=1))
    assert board.rows
    for r in board.rows:
        cell = next(c for c in data.table2 if (c.model, c.strategy, c.scorer, c.domain) == (r.target, r.strategy, r.scorer, ALL_DOMAINS))
        for m in PAIR_METRICS:
            assert cell.metric(m.key).mean == pytest.approx(r.metric(m.key).value, abs=1e-12), (r.target, r.scorer, m.key)
            assert cell.metric(m.key).ci == pytest.approx(r.metric(m.key).ci, abs=1e-12), (r.target, r.scorer, m.key)
    # the summary's sentence is the `all pooled` cell, as Table 2 and the leaderboard write it
    for line in in_short(data):
        if line.startswith("Transfer, ") and "not interpretable" not in line:
            model, strategy, scorer = line.removeprefix("Transfer, ").split(":")[0].split(" / ")
            cell = next(c for c in data.table2 if (c.model, c.strategy, c.scorer, c.domain) == (model, strategy, scorer, ALL_DOMAINS))
            tr = cell.metric("transfer")
            assert tr.mean is not None and tr.ci is not None
            assert f"{100 * tr.mean:.1f}% [{100 * tr.ci[0]:.1f}, {100 * tr.ci[1]:.1f}], the mean over" in line
            assert "every domain's questions pooled" in line and "bootstrap over entities" in line
