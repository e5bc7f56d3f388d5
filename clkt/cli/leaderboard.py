"""`clkt leaderboard`: Learn, Overall and Transfer per target pooled over a window of snapshots, with n and a
bootstrap interval over entities, one column per snapshot, the window's language pairs, a paired comparison of
two targets (`--compare-targets A,B`) or of two strategies of one target (`--compare-strategies A,B`,
`clkt.cli.leaderboard_strategies`) and the predictions behind every figure (`--predictions FILE.csv`). The open
track's rows (short answers, issue 47: one row per scoring layer, open-normaliser and open-jury) follow in a section of
their own (`clkt.report.open_board`), never pooled, ranked or compared with the multiple-choice rows; the JSON
has them as `open_rows`, the CSV after the MCQ rows with `format` = open.

A result is kept in the data dir and read back while the store has not changed (`clkt.report.board_cache`;
`--no-cache` computes afresh). Refused with one line and exit 2 (`clkt.report.window`): an unknown spec, target, strategy or scorer, a period
that does not parse for `snapshot.cadence`, `--from` after `--to`, a window with no snapshot, `--json` with `--csv`,
an unknown `--by` key. `--by domain|size|asymmetry`: the paper's tables over the window (`clkt.cli.leaderboard_by`),
the open track's layers in a section of their own after the MCQ tables.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clkt.cli.common import (
    ConfigOption,
    console,
    err_console,
    fail,
    load_cli_settings,
    plain,
    plural,
    print_table,
    read_store,
    run_async,
)
from clkt.cli.vocabulary import target_options

if TYPE_CHECKING:
    from rich.table import Table

    from clkt.config import Settings
    from clkt.report.by_domain import DomainBoard
    from clkt.report.leaderboard_data import (
        Comparison,
        ControlEstimate,
        Estimate,
        Leaderboard,
        LeaderboardQuery,
        LeaderRow,
    )
    from storage.engine import Store

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("leaderboard", help="Results pooled over a window of snapshots per target, with CIs; paired comparisons.")(leaderboard)


def _pct(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    ci = f" [{100 * e.ci[0]:.1f}, {100 * e.ci[1]:.1f}]" if e.ci else ""
    spread = f" ±{100 * e.seed_std:.1f} seed sd" if e.seed_std is not None else ""  # pooled over training seeds
    return f"{100 * e.value:.1f}{ci}{spread}"


def _kept(e: Estimate | None) -> str:
    """Kept % with its interval and n, `too few` under `MIN_KEPT_N` questions right before, `—` without."""
    from clkt.report.locality import MIN_KEPT_N

    if e is None:
        return "—"
    if e.value is None or e.n < MIN_KEPT_N:
        return f"too few (n={e.n})"
    return f"{_pct(e)} (n={e.n})"


CONTROL_HEADER = "control: injected % [CI] (base, gain; n, entities)"  # the open track's control split


def _control(e: ControlEstimate | None) -> str:
    """The open control split's Learn with its interval and n, `too few` under its rule, `—` without."""
    if e is None:
        return "—"
    if e.too_few:
        return f"too few (n={e.n}, {e.entities} entities)"
    return (f"{_pct(e.injected)} (base {100 * (e.base or 0):.1f}, gain {100 * (e.gain.value or 0):+.1f}; "
            f"n={e.n}, {e.entities} entities)")


def _rank(r: LeaderRow) -> str:
    if r.too_few:
        return "too few"
    if r.rank is None:
        return "—"
    return f"={r.rank}" if r.tied else str(r.rank)


def _who(r: LeaderRow) -> str:
    """The target cell: a submitted row says so, and whether it was reproduced here (with the agreement)."""
    if r.track != "submitted":
        return r.target
    rate = f" {100 * r.agreement:.1f} %" if r.agreement is not None else ""
    probe = f", {r.probe}" if r.probe else ""
    return f"{r.target} [submitted, {r.verified}{rate}{probe}]"


def _provenance(board: Leaderboard) -> Table | None:
    from rich.table import Table

    from clkt.report.submitted import board_packs

    packs = board_packs(board)
    if not packs:
        return None
    t = Table("pack sha256", "target", "model", "revision / weights sha256", "snapshot", "strategy", "clkt",
              "environment", "submitted at", "reproduced here",
              title="Submitted packs (clkt submit): scored here from their letters against this store's answer key")
    for p in packs:
        env = ", ".join(f"{k} {v}" for k, v in p.environment.items() if v)
        rep = p.reproduction
        again = "no" if rep is None else (f"{'yes' if rep.reproduced else 'FLAGGED'}: {rep.agreed}/{rep.checked} "
                                          f"letters agree ({100 * rep.rate:.1f} %, threshold {100 * rep.threshold:.0f} %)"
                                          + (f"; {rep.failed}" if rep.failed else ""))
        t.add_row(p.pack_sha256[:12], plain(p.target), plain(p.model), plain(p.model_revision or p.weights_sha256 or "—"),
                  p.snapshot_id, p.strategy, p.clkt_version, plain(env), p.submitted_at, again)
    return t


def _tables(board: Leaderboard) -> list[Table]:
    """The multiple-choice rows' tables, the submitted packs, the heatmaps and the comparison."""
    out = _row_tables(board, board.rows)
    provenance = _provenance(board)
    if provenance is not None:
        out.append(provenance)
    out += _heatmaps(board, board.rows)
    if board.comparison is not None:
        out.append(_comparison_table(board.comparison))
    return out


def _open_tables(board: Leaderboard) -> list[Table]:
    """The open track's section (`clkt.report.open_board`): its rows' tables and heatmaps, each named with its layer."""
    return [*_row_tables(board, board.open_rows), *_heatmaps(board, board.open_rows)]


def _group_name(strategy: str, scorer: str) -> str:
    from clkt.cli.leaderboard_by import group_name

    return group_name(strategy, scorer)


def _row_tables(board: Leaderboard, board_rows: list[LeaderRow]) -> list[Table]:
    from rich.table import Table

    from clkt.report.metric_table import PAIR_METRICS

    out: list[Table] = []
    groups = sorted({(r.strategy, r.scorer) for r in board_rows})
    for strategy, scorer in groups:
        rows = [r for r in board_rows if (r.strategy, r.scorer) == (strategy, scorer)]
        kept = any(r.kept is not None for r in rows)  # a column only when some job answered a locality split
        control = any(r.control is not None for r in rows)  # ... and an open control split
        t = Table("rank", "target", "snapshots", "questions", "entities", "Learn: injected % [CI] (base, gain, p)",
                  *[f"{m.label} % [CI] (n)" for m in PAIR_METRICS], *(["kept % [CI] (n right before)"] if kept else []),
                  *([CONTROL_HEADER] if control else []),
                  title=f"{_group_name(strategy, scorer)} — pooled over the window; 95% CI from a bootstrap over entities "
                        f"(and over training seeds where a row has several: the mean over seeds ± their sd); "
                        f"'=' marks ranks the CIs cannot separate")
        for r in rows:
            lr = r.learn
            learn = (f"{_pct(lr.injected)} (base {100 * (lr.base or 0):.1f}, gain {100 * (lr.gain.value or 0):+.1f}, "
                     f"p={lr.p_value:.2g}{'' if lr.learned else ', NOT learned'}; n={lr.n})")
            metrics = [f"{_pct(r.metric(m.key))} (n={r.metric(m.key).n})"
                       + (f", {r.not_interpretable} n.i. pairs" if m.needs_learned and r.not_interpretable else "") for m in PAIR_METRICS]
            seeds = f" ({len(r.seeds)} seeds)" if r.seeds else ""
            t.add_row(_rank(r), plain(_who(r)) + seeds, str(r.snapshots), str(r.questions), str(r.entities), learn, *metrics,
                      *([_kept(r.kept)] if kept else []), *([_control(r.control)] if control else []))
        out.append(t)
        per = Table("target", *[s.period for s in board.snapshots],
                    title=f"{_group_name(strategy, scorer)} — per snapshot: {' / '.join(m.label for m in PAIR_METRICS)} % (questions)")
        for r in rows:
            cells = []
            for c in r.per_snapshot:
                if c.status != "ok":
                    cells.append(c.status)
                    continue
                values = [c.metric(m.key).value for m in PAIR_METRICS]
                cells.append(" / ".join("n/a" if v is None else f"{100 * v:.0f}" for v in values) + f" ({c.questions})")
            per.add_row(plain(_who(r)), *cells)
        out.append(per)
    return out


def _heatmaps(board: Leaderboard, rows: list[LeaderRow]) -> list[Table]:
    from rich.table import Table

    from clkt.report.metric_table import HEATMAP

    out: list[Table] = []
    for r in rows:
        langs = [x for x in board.languages if any(p.test_lang == x for p in r.pairs)]
        t = Table("train \\ test", *langs, title=f"{HEATMAP.label} % per language pair over the window (n = {'+'.join(HEATMAP.denominator)}) "
                                                 f"— {r.target}, {_group_name(r.strategy, r.scorer)}")
        for lt in r.train_langs:
            cells = []
            for ls in langs:
                p = next((p for p in r.pairs if p.train_lang == lt and p.test_lang == ls), None)
                if p is None:
                    cells.append("—")
                elif p.reading == "ok":
                    cells.append(f"{_pct(p.metric(HEATMAP.key))} (n={p.metric(HEATMAP.key).n})")
                else:
                    cells.append(f"{p.reading} (n={p.metric(HEATMAP.key).n})")
            t.add_row(lt, *cells)
        out.append(t)
    return out


def _comparison_table(c: Comparison) -> Table:
    from rich.table import Table

    t = Table("metric", "scope", f"{c.target_a} % [CI]", f"{c.target_b} % [CI]", "a - b pts [CI]", "n", "McNemar a only / b only, p",
              "verdict",
              title=f"{c.target_a} ({c.scorer_a}) vs {c.target_b} ({c.scorer_b}), {c.strategy}: on the {c.questions} questions "
                    f"({c.entities} entities, {len(c.snapshots)} snapshots, {c.question_pairs} question x pair units) valid "
                    "for both; paired bootstrap over entities")
    for line in c.lines:
        d = line.diff
        diff = "n/a" if d.value is None else f"{100 * d.value:+.1f}" + (f" [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]" if d.ci else "")
        p = "n/a" if line.p_value is None else f"{line.p_value:.3g}"
        t.add_row(line.metric, line.scope, _pct(line.a), _pct(line.b), diff, str(d.n), f"{line.a_only} / {line.b_only}, p={p}",
                  plain(line.verdict))
    return t


def _csv(board: Leaderboard) -> str:
    from clkt.report.metric_table import PAIR_METRICS
    from clkt.report.open_board import is_open
    from clkt.snapshots.audit import neutralise_cell

    def num(v: float | None) -> str:
        return "" if v is None else f"{v:.6f}"

    def est(e: Estimate) -> list[str]:
        lo, hi = e.ci or (None, None)
        return [num(e.value), num(lo), num(hi), str(e.n)]

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["target", "strategy", "scorer", "rank", "tied", "too_few", "snapshots", "questions", "entities",
            "learn_injected", "learn_injected_ci_low", "learn_injected_ci_high", "learn_n", "learn_base", "learn_gain",
            "learn_gain_ci_low", "learn_gain_ci_high", "learn_p_value", "learned",
            *[f"{m.key}{x}" for m in PAIR_METRICS for x in ("", "_ci_low", "_ci_high", "_n")]]
    # kept % columns only when some job answered a locality split; the open control's when some open row has one
    kept = any(r.kept is not None for r in [*board.rows, *board.open_rows])
    head += ["kept", "kept_ci_low", "kept_ci_high", "kept_n"] if kept else []
    control = any(r.control is not None for r in board.open_rows)
    head += [f"control_{x}" for x in ("injected", "injected_ci_low", "injected_ci_high", "n", "base", "gain", "gain_ci_low",
                                      "gain_ci_high", "p_value", "entities", "too_few")] if control else []
    head += [f"{s.period} {m}" for s in board.snapshots for m in (*PAIR_METRICS.ordered_keys(), "questions")]
    head += ["track", "verified", "agreement", "packs"]  # a submitted row: reproduced here? its packs' sha256s
    head += ["format"]  # "mcq", or "open" (the open track's rows, after the MCQ ones: never pooled with them)
    seeded = any(r.seeds for r in board.rows)  # several training seeds: their columns (else the CSV as it was)
    if seeded:
        head += ["seeds", *[f"{m.key}_seed_std" for m in PAIR_METRICS], *[f"{m.key}_sampling_ci_{x}" for m in PAIR_METRICS for x in ("low", "high")]]
    w.writerow(head)
    for r in [*board.rows, *board.open_rows]:
        lr = r.learn
        row = [r.target, r.strategy, r.scorer, "" if r.rank is None else str(r.rank), str(r.tied), str(r.too_few), str(r.snapshots),
               str(r.questions), str(r.entities), *est(lr.injected), num(lr.base), *est(lr.gain)[:3], f"{lr.p_value:.6g}", str(lr.learned),
               *[x for m in PAIR_METRICS for x in est(r.metric(m.key))]]
        row += (est(r.kept) if r.kept is not None else ["", "", "", ""]) if kept else []
        if control:
            ce = r.control
            row += ([*est(ce.injected), num(ce.base), *est(ce.gain)[:3], f"{ce.p_value:.6g}", str(ce.entities), str(ce.too_few)]
                    if ce is not None else [""] * 11)
        for c in r.per_snapshot:
            if c.status == "ok":
                row += [*[num(c.metric(m.key).value) for m in PAIR_METRICS], str(c.questions)]
            else:
                row += [*[c.status for _ in PAIR_METRICS], "0"]
        row += [r.track, r.verified, num(r.agreement), " ".join(p.pack_sha256 for p in r.submissions)]
        row += ["open" if is_open(r.scorer) else "mcq"]
        if seeded:
            row += [" ".join(map(str, r.seeds or [])), *[num(r.metric(m.key).seed_std) for m in PAIR_METRICS],
                    *[num(x) for m in PAIR_METRICS for x in (r.metric(m.key).sampling_ci or (None, None))]]
        w.writerow([neutralise_cell(x) for x in row])
    return buf.getvalue()


async def _write_predictions(
    store: Store, q: LeaderboardQuery, predictions: Path | None, open_predictions: Path | None,
) -> list[tuple[str, Path, int]]:
    """The predictions files asked for (the MCQ answers, the open track's); each one's label, path and row count."""
    from clkt.report.open_predictions import write_open_predictions
    from clkt.report.window import write_predictions

    out: list[tuple[str, Path, int]] = []
    if predictions is not None:
        out.append(("predictions", predictions, await write_predictions(store, q, predictions)))
    if open_predictions is not None:
        out.append(("open predictions", open_predictions, await write_open_predictions(store, q, open_predictions)))
    return out


def _check_by(by: str | None, transfer_pairs: str, *, compare: bool, predictions: bool) -> None:
    from clkt.report.by_domain import BY_KEYS

    if by is not None and by not in BY_KEYS:
        raise fail(f"--by: unknown key {by!r}; known: {', '.join(BY_KEYS)}")
    if transfer_pairs not in ("learned", "all"):
        raise fail(f"--transfer-pairs: {transfer_pairs!r}; known: learned, all")
    if by is not None and (compare or predictions):
        raise fail("--by with --compare-targets or --predictions: choose one")


def _by(settings: Settings, q: LeaderboardQuery, by: str, transfer_pairs: str, *, as_json: bool, as_csv: bool) -> None:
    from clkt.cli.leaderboard_by import write_by
    from clkt.report.domain_board import load_domain_board

    sizes = {t.name: (t.family, t.size_b) for t in settings.spec.targets if t.size_b is not None} \
        if q.spec == settings.spec.name else {}

    async def read() -> DomainBoard:
        async with read_store(settings) as store:
            return await load_domain_board(store, q, transfer_pairs="all" if transfer_pairs == "all" else "learned",
                                           sizes=sizes)

    write_by(run_async(read), by, as_json=as_json, as_csv=as_csv)


def _print_strategies(board: Leaderboard) -> None:
    if board.strategy_comparison is None:
        return
    from clkt.cli.leaderboard_strategies import strategy_tables

    for t in strategy_tables(board.strategy_comparison):
        print_table(t)
    for note in board.strategy_comparison.notes:
        console.print("[yellow]note:[/]", plain(note))


def _print_open(board: Leaderboard) -> None:
    """The open track's section, after every multiple-choice table (none without open answers in the window)."""
    if not board.open_rows:
        return
    from clkt.report.open_track import OPEN_TITLE

    console.print(f"[bold]{OPEN_TITLE}[/] — the same facts asked as short answers, apart from the multiple-choice rows "
                  "above and never pooled, ranked or compared with them; each figure named with its scoring layer "
                  "(normaliser: the per-language normaliser, an answer in another language never right; jury: the "
                  "majority of the LLM judges on the answers they graded, undecided never right)")
    for t in _open_tables(board):
        print_table(t)


def leaderboard(
    config: ConfigOption = None,
    spec: Annotated[str | None, typer.Option("--spec", help="the spec (default: the configured one)")] = None,
    period_from: Annotated[str | None, typer.Option("--from", help="first period of the window (default: the first held)")] = None,
    period_to: Annotated[str | None, typer.Option("--to", help="last period of the window (default: the last held)")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="only this injection strategy")] = None,
    scorer: Annotated[str | None, typer.Option("--scorer", help="only this result scorer (e.g. generate-circular)")] = None,
    target: Annotated[list[str] | None, typer.Option("--target", help="only these targets: A,B (or repeated)")] = None,
    compare_targets: Annotated[str | None, typer.Option("--compare-targets", help="compare two targets: A,B")] = None,
    compare: Annotated[tuple[str, str] | None, typer.Option("--compare", hidden=True, help="old: --compare A B")] = None,
    compare_strategies: Annotated[str | None, typer.Option("--compare-strategies", help="compare two strategies of one "
                                                           "target (--target) on the same questions: A,B")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the leaderboard as JSON")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="the rows as CSV")] = False,
    predictions: Annotated[Path | None, typer.Option("--predictions", help="write the predictions behind it as CSV")] = None,
    open_predictions: Annotated[Path | None, typer.Option(
        "--open-predictions", help="write the open track's answers behind it as CSV (answer, verdict, reason; the jury's verdict "
                                       "and votes where it graded)")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="the bootstrap's seed")] = 0,
    min_questions: Annotated[int | None, typer.Option("--min-questions", min=1, max=1_000_000,
                                                      help="fewer distinct test questions: too few, not ranked (default 50)")] = None,
    bootstrap: Annotated[int | None, typer.Option("--bootstrap", min=100, max=10_000, help="bootstrap draws (default 1000)")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="compute afresh, not from the kept result of an unchanged store")] = False,
    by: Annotated[str | None, typer.Option("--by", help="the paper's tables over the window: domain (Table 2), size "
                                                        "(Figure 4) or asymmetry (McNemar per language pair); the open "
                                                        "track's layers in a section of their own")] = None,
    unverified: Annotated[bool, typer.Option("--unverified", help="list submitted rows not reproduced here apart, never ranked")] = False,
    transfer_pairs: Annotated[str, typer.Option("--transfer-pairs", help="--by: Transfer's mean over the pairs whose "
                                                "train language 'learned' (clkt) or over 'all' pairs (the paper)")] = "learned",
) -> None:
    from clkt.report.basics import BOOTSTRAP_SAMPLES
    from clkt.report.board_cache import board_cache_dir, cached_leaderboard
    from clkt.report.leaderboard_data import MIN_QUESTIONS, LeaderboardQuery

    if as_json and as_csv:
        raise fail("--json and --csv: choose one")
    compare, target = target_options(compare_targets, compare, target)
    _check_by(by, transfer_pairs, compare=compare is not None, predictions=predictions is not None or open_predictions is not None)
    from clkt.cli.leaderboard_strategies import parse_pair

    strategy_pair = parse_pair(compare_strategies, by=by)
    settings = load_cli_settings(config)
    name = spec or settings.spec.name
    q = LeaderboardQuery(
        spec=name, cadence=settings.snapshot.cadence, rolling_days=settings.snapshot.rolling_days, period_from=period_from,
        period_to=period_to, strategy=strategy, scorer=scorer, targets=tuple(target or ()), compare=compare,
        compare_strategies=strategy_pair,
        languages=tuple(settings.spec.languages) if name == settings.spec.name else (), seed=seed,
        min_questions=min_questions or MIN_QUESTIONS, samples=bootstrap or BOOTSTRAP_SAMPLES, unverified=unverified,
    )
    for option, path in (("--predictions", predictions), ("--open-predictions", open_predictions)):
        if path is not None and not path.parent.is_dir():
            raise fail(f"{option}: no folder {path.parent}")
    if by is not None:
        _by(settings, q, by, transfer_pairs, as_json=as_json, as_csv=as_csv)
        return

    async def read() -> tuple[Leaderboard, list[tuple[str, Path, int]]]:
        async with read_store(settings) as store:
            board, _ = await cached_leaderboard(store, q, cache_dir=board_cache_dir(settings.data_dir), refresh=no_cache)
            return board, await _write_predictions(store, q, predictions, open_predictions)

    board, written = run_async(read)
    if as_json:
        sys.stdout.write(board.model_dump_json(indent=1) + "\n")
    elif as_csv:
        sys.stdout.write(_csv(board))
    else:
        console.print(f"[bold]Leaderboard[/] — spec {plain(board.spec)}, {board.cadence} window {board.window_from} .. "
                      f"{board.window_to} ({plural(len(board.snapshots), 'snapshot', 'snapshots')}); {board.bootstrap} bootstrap draws over entities, "
                      f"seed {board.seed}; rows on fewer than {board.min_questions} questions are too few to rank")
        for t in _tables(board):
            print_table(t)
        for note in [*board.notes, *(board.comparison.notes if board.comparison is not None else ())]:
            console.print("[yellow]note:[/]", plain(note))
        _print_strategies(board)
        _print_open(board)
    for label, path, n in written:
        (err_console if as_json or as_csv else console).print(plain(f"{label}: {path} ({n} rows)"))
