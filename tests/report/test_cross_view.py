"""One figure, one number (issue 45 item 6): a store with two targets, two strategies, three training seeds, two
snapshots, locality counts, an in-context track and two submitted packs (one whose en job did not learn), read by
every view: the leaderboard (the CLI's JSON and CSV, the board cache's copy, filtered or not), the snapshot report,
the per-domain board, both comparisons and the packs' metrics.json. Every figure that two views show (Learn,
Overall, Transfer, kept %, their intervals, the learned flags, each n) must be the same number in both.

Each check is recorded as `view A vs view B: what`; the test lists every figure that differs. On 467b40a 42 of the
151 checks differed: rows' intervals moved with `--target` / `--strategy` and a merged submission (20), the
report's Table 2 intervals against the board's (6), the report's seed rows against the board's (3), the per-domain
board against the board over seeds and over draws (10), a report cell's kept % "too few" shown as 75 % on the board,
a learned flag of the lowest seed against every seed's, and a pack's Transfer averaging a pair whose train language
did not learn.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from clkt.cli.leaderboard import _csv
from clkt.packs.metrics import compute_metrics
from clkt.report.by_domain import DomainBoard
from clkt.report.domain_board import load_domain_board
from clkt.report.leaderboard_data import Leaderboard, LeaderRow
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.report.writer import load_report_data, write_report_files
from storage.engine import Store
from tests.report._cross_store import SUBMITTED, pack_rows, seed_cross_store
from tests.report._window_store import LANGS, PERIODS, SPEC

_TOL = 1e-9


def _q(**kw: Any) -> LeaderboardQuery:
    # the submitted rows are not reproduced here: listed apart (unranked), they are still shown and must agree
    return LeaderboardQuery(spec=SPEC, languages=LANGS, min_questions=10, unverified=True, **kw)  # the report's draws


class _Diffs:
    def __init__(self) -> None:
        self.found: list[str] = []
        self.checked = 0

    def same(self, where: str, a: object, b: object) -> None:
        self.checked += 1
        if not _equal(a, b):
            self.found.append(f"{where}: {a!r} != {b!r}")


def _equal(a: object, b: object) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= _TOL
    return a == b


def _rows(board: Leaderboard) -> dict[tuple[str, str, str], LeaderRow]:
    return {(r.target, r.strategy, r.scorer): r for r in board.rows}


def _csv_rows(board: Leaderboard) -> dict[tuple[str, str, str], dict[str, str]]:
    return {(r["target"], r["strategy"], r["scorer"]): r for r in csv.DictReader(io.StringIO(_csv(board)))}


def _num(x: str) -> float | None:
    return float(x) if x else None


def _check_csv(d: _Diffs, board: Leaderboard) -> None:
    """The CSV's figures against the JSON's (the CSV writes 6 decimals)."""
    for key, r in _csv_rows(board).items():
        row = _rows(board)[key]
        for m in PAIR_METRICS:
            e = row.metric(m.key)
            d.same(f"CLI JSON vs CSV: {key} {m.key}", _round(e.value), _num(r[m.key]))
            d.same(f"CLI JSON vs CSV: {key} {m.key} ci", _round(e.ci), (_num(r[f"{m.key}_ci_low"]), _num(r[f"{m.key}_ci_high"]))
                   if r[f"{m.key}_ci_low"] else None)
            d.same(f"CLI JSON vs CSV: {key} {m.key} n", str(e.n), r[f"{m.key}_n"])
        d.same(f"CLI JSON vs CSV: {key} learned", str(row.learn.learned), r["learned"])
        if "kept" in r:
            kept = row.kept
            d.same(f"CLI JSON vs CSV: {key} kept", _round(kept.value) if kept else None, _num(r["kept"]))


def _round(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_round(v) for v in x)
    return None if x is None else float(f"{x:.6f}")


def _check_report(d: _Diffs, report: Any, board: Leaderboard) -> None:
    """The snapshot's report against a leaderboard whose window is that snapshot alone."""
    rows = _rows(board)
    seeded = {(r.target, r.strategy, r.scorer): r for r in report.seeds}
    for c in report.table2:  # every group, those run with several training seeds too (pooled over them)
        key = (c.model, c.strategy, c.scorer)
        if c.domain != ALL_DOMAINS or key not in rows:
            continue
        for m in PAIR_METRICS:
            d.same(f"report Table 2 vs leaderboard: {key} {m.key}", c.metric(m.key).mean, rows[key].metric(m.key).value)
            d.same(f"report Table 2 vs leaderboard: {key} {m.key} ci", c.metric(m.key).ci, rows[key].metric(m.key).ci)
    for t in report.learn:
        key = (t.model, t.strategy, t.scorer)
        if t.domain != ALL_DOMAINS or key not in rows:
            continue
        d.same(f"report Learn vs leaderboard: {key} {t.train_lang} learned", t.learned,
               t.train_lang in rows[key].learned_langs)
    for p in report.pairs:
        key = (p.model, p.strategy, p.scorer)
        if p.domain != ALL_DOMAINS or p.missing or key not in rows:
            continue
        cell = next(x for x in rows[key].pairs if (x.train_lang, x.test_lang) == (p.train_lang, p.test_lang))
        from clkt.report.data import pair_reading

        d.same(f"report pairs vs leaderboard heatmap: {key} {p.train_lang}->{p.test_lang} reading",
               pair_reading(report, p), cell.reading)
        d.same(f"report pairs vs leaderboard heatmap: {key} {p.train_lang}->{p.test_lang} A/B/C/D", p.table, cell.table)
    for key, r in seeded.items():
        row = rows[key]
        d.same(f"report seeds vs leaderboard: {key} learned", r.learned_langs, row.learned_langs)
        d.same(f"report seeds vs leaderboard: {key} Learn p", r.learn.p_value, row.learn.p_value)
        for m in PAIR_METRICS:
            a, b = r.metric(m.key), row.metric(m.key)
            d.same(f"report seeds vs leaderboard: {key} {m.key}", (a.value, a.ci, a.n), (b.value, b.ci, b.n))
    for k in report.locality:  # beta's one locality cell is its row's only one: the same kept %, the same rule
        key = (k.model, k.strategy, k.scorer)
        if k.model == "beta":
            kept = rows[key].kept
            d.same(f"report locality vs leaderboard kept: {key}", None if k.too_few else k.rate,
                   kept.value if kept else None)


def _check_metrics_json(d: _Diffs, saved: dict[str, Any], board: Leaderboard) -> None:
    """The report's metrics.json (as written) against the leaderboard of its snapshot: Table 2's `all` cells."""
    rows = _rows(board)
    for c in saved["table2"]:
        key = (c["model"], c["strategy"], c["scorer"])
        if c["domain"] != ALL_DOMAINS or key not in rows:
            continue
        for m in PAIR_METRICS:
            e = rows[key].metric(m.key)
            d.same(f"report metrics.json vs leaderboard: {key} {m.key}", c[f"{m.key}_mean"], e.value)
            d.same(f"report metrics.json vs leaderboard: {key} {m.key} ci", c[f"{m.key}_ci"], list(e.ci) if e.ci else None)


def _check_report_domains(d: _Diffs, report: Any, board: DomainBoard) -> None:
    """The report's Table 2 per domain and its asymmetry tests against the per-domain board of its snapshot alone."""
    cells = {(c.target, c.strategy, c.scorer, c.domain): c for c in board.cells}
    for c in report.table2:
        got = cells.get((c.model, c.strategy, c.scorer, c.domain))
        if got is None:
            continue
        for m in PAIR_METRICS:
            a, b = c.metric(m.key), got.metrics[m.key]
            d.same(f"report Table 2 vs per-domain board: {c.model}/{c.strategy}/{c.scorer} {c.domain} {m.key}",
                   (a.mean, a.std, a.ci), (b.mean, b.std, b.ci))
    asym = {(a.target, a.strategy, a.scorer, a.lang_1, a.lang_2): a for a in board.asymmetry}
    for a in report.asymmetry:
        key = (a.model, a.strategy, a.scorer, a.lang_1, a.lang_2)
        other = asym.get(key)
        d.same(f"report asymmetry vs per-domain board: {key}", (a.forward, a.backward, a.p_value),
               (other.forward, other.backward, other.p_value) if other else None)


def _check_incontext(d: _Diffs, report: Any, board: Leaderboard) -> None:
    """The in-context track: its own section, never a row of the board; the parametric Transfer it is read against
    is the report's (and so the board's) figure."""
    from clkt.report.incontext import _parametric

    (track,) = report.incontext
    d.same("in-context track vs leaderboard: never a row", [r.target for r in board.rows if "context" in r.track], [])
    row = _rows(board)[("beta", "cpt-lora", "generate")]
    d.same("in-context section vs leaderboard: beta's parametric Transfer beside its ceiling",
           f"{100 * row.metric('transfer').value:.1f}" in _parametric("beta", report.table2), True)
    d.same("in-context track: Transfer has its n and interval", track.transfer.ci is not None, True)


def _check_domains(d: _Diffs, cells: list[Any], board: Leaderboard, name: str) -> None:
    rows = _rows(board)
    for c in cells:
        key = (c.target, c.strategy, c.scorer)
        if c.domain != ALL_DOMAINS or key not in rows:
            continue
        for m in PAIR_METRICS:
            a, b = c.metrics[m.key], rows[key].metric(m.key)
            d.same(f"{name} vs leaderboard: {key} {m.key}", (a.mean, a.ci, a.n), (b.value, b.ci, b.n))


def _check_packs(d: _Diffs, board: Leaderboard) -> None:
    rows = _rows(board)
    for name in SUBMITTED:
        got = compute_metrics(pack_rows(name), LANGS, format_version=1).scorers["generate"]
        row = rows[(f"{name} (submitted)", "cpt-lora", "generate")]
        for m in PAIR_METRICS:
            d.same(f"pack metrics.json vs leaderboard: {name} {m.key}", got.means[m.key], row.metric(m.key).value)
        for lt, learn in got.learn.items():
            d.same(f"pack metrics.json vs leaderboard: {name} {lt} learned", learn.learned, lt in row.learned_langs)


def _check_comparisons(d: _Diffs, board: Leaderboard, strat: Leaderboard, models: Leaderboard) -> None:
    rows = _rows(board)
    sc = strat.strategy_comparison
    assert sc is not None
    for i, s in enumerate((sc.strategy_a, sc.strategy_b)):
        row = rows[(sc.target, s, sc.scorer)]
        d.same(f"strategy comparison vs leaderboard: {s} kept", sc.kept[i], row.kept)
        d.same(f"strategy comparison vs leaderboard: {s} learned", sc.learn[i].learned, row.learn.learned)
    c = models.comparison
    assert c is not None
    a, b = rows[(c.target_a, c.strategy, c.scorer_a)], rows[(c.target_b, c.strategy, c.scorer_b)]
    both = set(a.learned_langs) & set(b.learned_langs)
    left = next(line for line in c.lines if line.metric == "Transfer" and line.scope == "all pairs")
    d.same("model comparison vs leaderboard: Transfer's train languages (learned by both)",
           left.a.value is None, not both)


async def test_every_view_shows_one_number_per_figure(store: Store, tmp_path: Path) -> None:
    info = await seed_cross_store(store)
    window = dict(period_from=PERIODS[0], period_to=PERIODS[1])
    board = await load_leaderboard(store, _q(**window))
    d = _Diffs()
    # the CLI's JSON, read back (the board cache's copy), and its CSV
    d.same("CLI JSON vs its read-back", Leaderboard.model_validate_json(board.model_dump_json()), board)
    _check_csv(d, board)
    # a row's figures do not move with the board's filters (`--target`, `--strategy`) nor with submitted packs
    for kw in ({"targets": ("alpha",)}, {"strategy": "memit"}, {"targets": ("alpha", "beta")}):
        other = _rows(await load_leaderboard(store, _q(**window, **kw)))
        for key, row in _rows(board).items():
            if key in other:
                for m in PAIR_METRICS:
                    a, b = row.metric(m.key), other[key].metric(m.key)
                    d.same(f"board vs board filtered {kw}: {key} {m.key}", (a.value, a.ci, a.n), (b.value, b.ci, b.n))
    # the report of 2025-01 against a leaderboard of that snapshot alone
    one = await load_leaderboard(store, _q(period_from=PERIODS[0], period_to=PERIODS[0]))
    report = await load_report_data(store, info.snapshots[PERIODS[0]])
    _check_report(d, report, one)
    write_report_files(report, tmp_path)
    _check_metrics_json(d, json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8")), one)
    _check_report_domains(d, report, await load_domain_board(store, _q(period_from=PERIODS[0], period_to=PERIODS[0])))
    _check_incontext(d, report, one)
    # the per-domain board (Table 2 over the window) against the leaderboard
    domains = await load_domain_board(store, _q(**window))
    _check_domains(d, domains.cells, board, "per-domain board")
    # the packs' metrics.json against their submitted rows (2025-01 only)
    _check_packs(d, one)
    # both comparisons
    strat = await load_leaderboard(store, _q(**window, targets=("alpha",), compare_strategies=("cpt-lora", "memit")))
    models = await load_leaderboard(store, _q(**window, compare=("alpha", "beta"), strategy="cpt-lora", scorer="generate"))
    _check_comparisons(d, board, strat, models)
    print(json.dumps({"checked": d.checked, "differ": d.found}, indent=1))
    assert d.checked > 100
    assert not d.found, f"{len(d.found)} of {d.checked} figures differ between views:\n" + "\n".join(d.found)
