"""A metric declared in the test tree only flows through to every consumer of the metric table
(`clkt.report.metric_table.PAIR_METRICS`): the snapshot report's Table 2, `table2.csv`, `pairs.csv`,
`metrics.json`, `report.md`, the leaderboard's rows, snapshot columns, pair cells, comparison, the
`clkt leaderboard` CSV and the pages. A consumer that names Overall and Transfer by hand again fails here.

The toy metric: Consistency = (A+D)/(A+B+C+D), the share of questions answered alike (both right or both wrong)
in the two languages of a pair.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clkt.report.data import ReportData
from clkt.report.metric_table import PAIR_METRICS, PairMetric
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.report.writer import report_dir, write_report
from storage.engine import Store
from tests.report._store import SNAPSHOT_ID, seed_report_store
from tests.report._window_store import LANGS, SPEC, seed_window_store

CONSISTENCY = PairMetric(key="consistency", label="Consistency", numerator="AD", denominator="ABCD")


@pytest.fixture
def consistency() -> Iterator[PairMetric]:
    PAIR_METRICS.register(CONSISTENCY)
    try:
        yield CONSISTENCY
    finally:
        PAIR_METRICS.unregister(CONSISTENCY.key)


def _by_hand(a: int, b: int, c: int, d: int) -> float | None:
    return (a + d) / (a + b + c + d) if a + b + c + d else None


def test_the_table_refuses_a_second_metric_of_a_key(consistency: PairMetric) -> None:
    with pytest.raises(ValueError, match="already declared"):
        PAIR_METRICS.register(PairMetric(key="consistency", label="Again", numerator="A", denominator="AB"))
    with pytest.raises(ValueError, match="among the denominator"):
        PairMetric(key="odd", label="Odd", numerator="C", denominator="AB")
    assert PAIR_METRICS.ordered_keys() == ["overall", "transfer", "consistency"]
    assert consistency.definition == "(A+D)/(A+B+C+D)"


async def test_a_toy_metric_flows_through_the_snapshot_report(tmp_path: Path, consistency: PairMetric) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_report_store(store)
        await write_report(store, SNAPSHOT_ID, report_dir(tmp_path, SNAPSHOT_ID))
    out = report_dir(tmp_path, SNAPSHOT_ID)
    golden = Path(__file__).parent / "golden"

    pairs = list(csv.DictReader(io.StringIO((out / "pairs.csv").read_text(encoding="utf-8"))))
    assert pairs and "consistency" in pairs[0] and "consistency_reading" not in pairs[0]  # no interpretable-when rule
    for row in pairs:
        want = _by_hand(*(int(row[x]) for x in "ABCD"))
        assert row["consistency"] == ("" if want is None else f"{100 * want:.2f}")
    # the table's own metrics keep their columns and values: the toy metric comes after them, and its bootstrap
    # draws after theirs
    old = list(csv.reader(io.StringIO((golden / "pairs.csv").read_text(encoding="utf-8"))))
    new = list(csv.reader(io.StringIO((out / "pairs.csv").read_text(encoding="utf-8"))))
    assert [r[:12] + r[13:] for r in new] == old

    table2 = list(csv.DictReader(io.StringIO((out / "table2.csv").read_text(encoding="utf-8"))))
    old_t2 = list(csv.DictReader(io.StringIO((golden / "table2.csv").read_text(encoding="utf-8"))))
    # one set of draws serves every metric: another metric moves no interval of the others
    assert [{k: r[k] for k in o} for r, o in zip(table2, old_t2, strict=True)] == old_t2
    data = ReportData.model_validate_json((out / "metrics.json").read_bytes())
    for cell, row in zip(data.table2, table2, strict=True):
        got = cell.metric("consistency")
        assert row["consistency_mean"] == ("" if got.mean is None else f"{100 * got.mean:.2f}")
        if cell.domain == ALL_DOMAINS:  # the mean over the pooled domain's pairs, by hand
            vals = [v for p in data.pairs if (p.model, p.strategy, p.scorer, p.domain) == (cell.model, cell.strategy, cell.scorer, ALL_DOMAINS)
                    and (v := _by_hand(p.table.a, p.table.b, p.table.c, p.table.d)) is not None]
            assert got.mean == pytest.approx(sum(vals) / len(vals), abs=1e-12)
            assert got.ci is not None and got.ci[0] <= got.mean <= got.ci[1]
    raw = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert list(raw["table2"][0])[4:13] == ["overall_mean", "overall_std", "transfer_mean", "transfer_std", "consistency_mean",
                                            "consistency_std", "overall_ci", "transfer_ci", "consistency_ci"]

    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Consistency = (A+D)/(A+B+C+D)" in md
    assert "| mean of domains Transfer | movies Consistency |" in md and "| mean of domains Consistency |" in md


async def test_a_toy_metric_flows_through_the_leaderboard(store: Store, consistency: PairMetric) -> None:
    await seed_window_store(store)
    board = await load_leaderboard(store, LeaderboardQuery(spec=SPEC, languages=LANGS, compare=("alpha", "beta"), min_questions=10))
    assert board.rows
    for r in board.rows:
        per_pair = [v for p in r.pairs if (v := _by_hand(p.table.a, p.table.b, p.table.c, p.table.d)) is not None]
        got = r.metric("consistency")
        assert got.value == pytest.approx(sum(per_pair) / len(per_pair), abs=1e-12)
        assert got.n == sum(p.table.n for p in r.pairs) and got.ci is not None
        for p in r.pairs:
            assert p.metric("consistency").value == _by_hand(p.table.a, p.table.b, p.table.c, p.table.d)
        ok = [c for c in r.per_snapshot if c.status == "ok"]
        assert ok and all(c.metric("consistency").value is not None for c in ok)
    assert board.comparison is not None
    assert [ln.metric for ln in board.comparison.lines if ln.scope == "all pairs"] == ["Overall", "Transfer", "Consistency"]

    dumped = json.loads(board.model_dump_json())
    assert list(dumped["rows"][0]).index("consistency") == list(dumped["rows"][0]).index("transfer") + 1
    assert type(board).model_validate(dumped) == board  # read back (the board cache) as written

    from clkt.cli.leaderboard import _csv

    head = next(csv.reader(io.StringIO(_csv(board))))
    assert {"consistency", "consistency_ci_low", "consistency_ci_high", "consistency_n"} <= set(head)
    assert any(h.endswith(" consistency") for h in head)  # a column per snapshot



async def test_a_toy_metric_has_its_column_on_the_leaderboard_page(tmp_path: Path, consistency: PairMetric) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.services import page_context
    from clkt.web import pages_app
    from tests.web.seed import settings_for, write_config

    settings = settings_for(write_config(tmp_path, extra='[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n'))
    async with Store(url=settings.resolved_store_url) as store:
        await seed_window_store(store)
        async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
            resp = await client.get("/leaderboard")
            html = await resp.text()
    assert resp.status == 200
    assert "<th>Transfer % [CI] (n)</th><th>Consistency % [CI] (n)</th>" in html
    assert "Per snapshot: Overall / Transfer / Consistency % [95% CI]" in html


def test_the_toy_metric_is_gone_after_its_fixture() -> None:
    assert PAIR_METRICS.ordered_keys() == ["overall", "transfer"]
