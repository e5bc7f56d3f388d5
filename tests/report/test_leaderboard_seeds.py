"""Several training seeds on the leaderboard (`spec.seeds`, issue 35 item 1): a row whose jobs ran with two seeds
is pooled over them (the mean over seeds, the between-seed std beside an interval over entities and seeds); a
row of one seed reads exactly as it did."""

from __future__ import annotations

import random

import numpy as np

from clkt.report.window import LeaderboardQuery, load_leaderboard
from storage.engine import Store
from tests.report._window_store import LANGS, SPEC, WindowStore, add_seed_jobs, seed_window_store

TRAINS = ("en", "fr")


async def _second_seed(store: Store, info: WindowStore, target: str) -> None:
    """A seed-1 job of `target` per snapshot and train language, answering like a weaker model (a seed that
    learned less): its answers differ from seed 0's on the same questions."""
    await add_seed_jobs(store, info, target=target, snapshot_ids=list(info.snapshots.values()), seeds=[1],
                        rng=random.Random(99))


def _query() -> LeaderboardQuery:
    return LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, samples=300)


async def test_two_seeds_are_pooled_with_their_spread_and_one_seed_reads_as_before(store: Store) -> None:
    info = await seed_window_store(store)
    before = await load_leaderboard(store, _query())
    await _second_seed(store, info, "alpha")
    after = await load_leaderboard(store, _query())

    def row(board: object, target: str, scorer: str = "generate"):  # type: ignore[no-untyped-def]
        return next(r for r in board.rows if (r.target, r.scorer) == (target, scorer))  # type: ignore[attr-defined]

    one, two = row(before, "alpha"), row(after, "alpha")
    assert one.seeds is None and two.seeds == [0, 1]
    for key in ("overall", "transfer"):
        per = two.per_seed[key]
        assert per[0] == one.metric(key).value  # seed 0's value is the one-seed row's
        assert per[1] is not None and per[1] != per[0]
        est = two.metric(key)
        assert est.value == np.mean([per[0], per[1]])
        assert est.seed_std is not None and abs(est.seed_std - abs(per[0] - per[1]) / np.sqrt(2)) < 1e-12
        assert est.ci is not None and est.sampling_ci is not None
        # the interval over entities and seeds is wider than the one over entities alone, and holds both seeds' values
        assert est.ci[1] - est.ci[0] > est.sampling_ci[1] - est.sampling_ci[0]
        assert est.ci[0] <= min(per.values()) and max(per.values()) <= est.ci[1]
    # Learn's test on every seed's paired answers together (the one rule): its p is McNemar's on the summed
    # gained / lost, and the learned flags are that test's
    from clkt.report.stats import mcnemar_exact

    assert two.learn.n == 2 * one.learn.n and two.learn.gained > one.learn.gained
    assert two.learn.p_value == mcnemar_exact(two.learn.gained, two.learn.lost)
    assert set(two.learned_langs) == {p.train_lang for p in two.pairs if p.reading != "not interpretable"}
    assert two.learn.injected.seed_std is not None and two.learn.injected.seed_std > 0
    # beta ran one seed: its row is what it was, and its JSON has no seed field
    b1, b2 = row(before, "beta").model_dump(mode="json"), row(after, "beta").model_dump(mode="json")
    b1.pop("rank"), b2.pop("rank"), b1.pop("tied"), b2.pop("tied")
    assert b1 == b2 and "seeds" not in b2 and "seed_std" not in b2["overall"]
    dumped = two.model_dump(mode="json")
    assert dumped["seeds"] == [0, 1] and dumped["overall"]["seed_std"] == two.metric("overall").seed_std
    assert type(two).model_validate(dumped) == two  # read back (the board cache) as written


async def test_the_tables_and_the_csv_show_the_spread_beside_the_interval(store: Store) -> None:
    import csv
    import io

    from rich.console import Console

    from clkt.cli.leaderboard import _csv, _tables

    info = await seed_window_store(store)
    plain_csv = _csv(await load_leaderboard(store, _query()))
    assert "seed" not in plain_csv  # one seed: the CSV as it was
    await _second_seed(store, info, "alpha")
    board = await load_leaderboard(store, _query())
    console = Console(width=400, record=True)
    for t in _tables(board):
        console.print(t)
    text = console.export_text()
    assert "alpha (2 seeds)" in text and "seed sd" in text and "beta (" not in text
    rows = list(csv.DictReader(io.StringIO(_csv(board))))
    alpha = next(r for r in rows if (r["target"], r["scorer"]) == ("alpha", "generate"))
    beta = next(r for r in rows if r["target"] == "beta")
    two = next(r for r in board.rows if (r.target, r.scorer) == ("alpha", "generate"))
    assert alpha["seeds"] == "0 1" and float(alpha["overall_seed_std"]) == round(two.metric("overall").seed_std or 0, 6)
    assert beta["seeds"] == "" and beta["overall_seed_std"] == ""
