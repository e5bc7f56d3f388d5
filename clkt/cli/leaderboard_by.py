"""`clkt leaderboard --by domain|size|asymmetry`: the paper's tables pooled over the window
(`clkt.report.by_domain`): Table 2 per domain (the paper's mean ± std over ordered pairs and clkt's interval over
entities, both labelled), the size view (targets with `family` / `size_b`) and the directional asymmetry per
language pair (exact McNemar); as tables, `--json` (the whole board) or `--csv` (the rows of the view asked for).
The open track's layers (issue 47: open-normaliser, open-jury where the jury graded) follow in a section of their
own, after the multiple-choice tables, each table named with its layer and never pooled with an MCQ scorer's: in
the JSON as `open_cells` / `open_sizes` / `open_asymmetry`, in the CSV after the MCQ rows with `format` = open (the
column only when the window has open rows). A cell on fewer than `--min-questions` test questions says so
("too few"), its figures shown, as a leaderboard row is.
"""

from __future__ import annotations

import csv
import io
import sys
from typing import TYPE_CHECKING

from clkt.cli.common import console, plain

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.table import Table

    from clkt.report.by_domain import AsymmetryRow, DomainBoard, DomainCell, DomainMetric, SizePoint

__all__ = ["by_csv", "group_name", "print_by", "write_by"]


def group_name(strategy: str, scorer: str) -> str:
    """A table's group, an open layer's scorer named with its layer ("cpt-lora, open-jury (jury layer)")."""
    from clkt.report.open_board import is_open, layer_of

    return f"{strategy}, {scorer}" + (f" ({layer_of(scorer)} layer)" if is_open(scorer) else "")


def _scorer(scorer: str) -> str:
    from clkt.report.open_board import is_open, layer_of

    return scorer + (f" ({layer_of(scorer)} layer)" if is_open(scorer) else "")


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.6f}"


def _ci(ci: tuple[float, float] | None) -> list[str]:
    return [_num(ci[0]), _num(ci[1])] if ci else ["", ""]


def _cell(m: DomainMetric) -> str:
    if m.mean is None:
        return "n/a"
    std = f" ± {100 * m.std:.1f}" if m.std is not None else ""
    ci = f" [{100 * m.ci[0]:.1f}, {100 * m.ci[1]:.1f}]" if m.ci else ""
    return f"{100 * m.mean:.1f}{std}{ci} ({m.pairs} pairs)"


def _questions(c: DomainCell) -> str:
    return f"{c.questions} (too few)" if c.too_few else str(c.questions)


def _domain_tables(board: DomainBoard, board_cells: Sequence[DomainCell]) -> list[Table]:
    from rich.table import Table

    from clkt.report.metric_table import PAIR_METRICS

    out: list[Table] = []
    for group in sorted({(c.strategy, c.scorer) for c in board_cells}):
        cells = [c for c in board_cells if (c.strategy, c.scorer) == group]
        t = Table("target", "domain", "entities", f"questions (too few under {board.min_questions})",
                  *[f"{m.label} % mean ± std (paper) [95% CI] (clkt)" for m in PAIR_METRICS], "n.i. pairs",
                  title=f"Table 2 over the window — {group_name(*group)}: mean ± std over ordered pairs (the paper's); "
                        "[CI]: bootstrap over entities (clkt's); Transfer over "
                        + ("every pair (the paper's averaging)" if board.transfer_pairs == "all"
                           else "the pairs whose train language learned (clkt's)"))
        for c in cells:
            t.add_row(plain(c.target), plain(c.domain), str(c.entities), _questions(c),
                      *[_cell(c.metrics[m.key]) for m in PAIR_METRICS], str(c.not_interpretable))
        out.append(t)
    return out


def _size_table(points: Sequence[SizePoint]) -> Table:
    from rich.table import Table

    from clkt.report.metric_table import PAIR_METRICS

    t = Table("strategy", "scorer", "family", "size (B)", "target", *[f"{m.label} % [CI]" for m in PAIR_METRICS],
              title="By model size over the window (targets with size_b; all domains pooled)")
    for p in points:
        vals = []
        for m in PAIR_METRICS:
            e = p.metrics[m.key]
            vals.append("n/a" if e.value is None else f"{100 * e.value:.1f}"
                        + (f" [{100 * e.ci[0]:.1f}, {100 * e.ci[1]:.1f}]" if e.ci else ""))
        t.add_row(plain(p.strategy), plain(_scorer(p.scorer)), plain(p.family or "—"), f"{p.size_b:g}", plain(p.target), *vals)
    return t


def _asymmetry_table(rows: Sequence[AsymmetryRow]) -> Table:
    from rich.table import Table

    t = Table("target", "strategy", "scorer", "pair", "L1->L2 only", "L2->L1 only", "McNemar p", "stronger",
              title="Directional asymmetry over the window (exact McNemar on the questions both directions answered)")
    for a in rows:
        t.add_row(plain(a.target), plain(a.strategy), plain(_scorer(a.scorer)), f"{a.lang_1}-{a.lang_2}", str(a.forward),
                  str(a.backward), "n/a" if a.p_value is None else f"{a.p_value:.3g}", a.stronger or "tie")
    return t


def print_by(board: DomainBoard, by: str) -> None:
    """The view `by` as rich tables, with the window's header and notes."""
    console.print(f"[bold]Leaderboard by {by}[/] — spec {plain(board.spec)}, window {board.window_from} .. "
                  f"{board.window_to} ({len(board.snapshots)} snapshots); {board.bootstrap} bootstrap draws over "
                  f"entities, seed {board.seed}; a cell on fewer than {board.min_questions} test questions is too few "
                  "(shown, as a leaderboard row is)")
    for t in _tables(board, by, board.cells, board.sizes, board.asymmetry):
        console.print(t)
    if by == "size" and not board.sizes and not board.open_sizes:
        console.print("[yellow]note:[/] no target in the window has a size_b in [[spec.targets]]")
    for note in board.notes:
        console.print("[yellow]note:[/]", plain(note))
    _print_open(board, by)


def _tables(board: DomainBoard, by: str, cells: Sequence[DomainCell], sizes: Sequence[SizePoint],
            asymmetry: Sequence[AsymmetryRow]) -> list[Table]:
    if by == "domain":
        return _domain_tables(board, cells)
    return [_size_table(sizes) if by == "size" else _asymmetry_table(asymmetry)]


def _print_open(board: DomainBoard, by: str) -> None:
    """The open track's section of the view, after every multiple-choice table (none without open answers)."""
    if not board.open_cells:
        return
    from clkt.report.open_track import OPEN_TITLE

    console.print(f"[bold]{OPEN_TITLE}[/] — the same facts asked as short answers, by {by}, apart from the "
                  "multiple-choice tables above and never pooled with them; each table named with its scoring layer")
    for t in _tables(board, by, board.open_cells, board.open_sizes, board.open_asymmetry):
        console.print(t)


def _head(by: str) -> list[str]:
    from clkt.report.metric_table import PAIR_METRICS

    if by == "domain":
        return ["target", "strategy", "scorer", "domain", "entities", "not_interpretable", "transfer_over",
                *[f"{m.key}{x}" for m in PAIR_METRICS for x in ("_mean", "_std", "_ci_low", "_ci_high", "_pairs", "_n")],
                "questions", "too_few"]
    if by == "size":
        return ["target", "family", "size_b", "strategy", "scorer",
                *[f"{m.key}{x}" for m in PAIR_METRICS for x in ("", "_ci_low", "_ci_high", "_n")]]
    return ["target", "strategy", "scorer", "lang_1", "lang_2", "forward", "backward", "p_value", "stronger"]


def _rows(board: DomainBoard, by: str, cells: Sequence[DomainCell], sizes: Sequence[SizePoint],
          asymmetry: Sequence[AsymmetryRow]) -> list[list[str]]:
    """The view's rows of these cells, size points or asymmetry rows (the MCQ scorers' or the open layers')."""
    from clkt.report.metric_table import PAIR_METRICS

    if by == "domain":
        return [[c.target, c.strategy, c.scorer, c.domain, str(c.entities), str(c.not_interpretable), board.transfer_pairs,
                 *[x for m in PAIR_METRICS for x in (
                     _num(c.metrics[m.key].mean), _num(c.metrics[m.key].std), *_ci(c.metrics[m.key].ci),
                     str(c.metrics[m.key].pairs), str(c.metrics[m.key].n))], str(c.questions), str(c.too_few)]
                for c in cells]
    if by == "size":
        return [[p.target, p.family or "", f"{p.size_b:g}", p.strategy, p.scorer,
                 *[x for m in PAIR_METRICS for x in (
                     _num(p.metrics[m.key].value), *_ci(p.metrics[m.key].ci), str(p.metrics[m.key].n))]]
                for p in sizes]
    return [[a.target, a.strategy, a.scorer, a.lang_1, a.lang_2, str(a.forward), str(a.backward),
             "" if a.p_value is None else f"{a.p_value:.6g}", a.stronger or ""] for a in asymmetry]


def by_csv(board: DomainBoard, by: str) -> str:
    """The rows of the view `by` as CSV (cells neutralised against spreadsheet formulas): the MCQ scorers', then,
    with a `format` column (mcq / open) where the window has any, the open layers'."""
    from clkt.snapshots.audit import neutralise_cell

    mcq = _rows(board, by, board.cells, board.sizes, board.asymmetry)
    rows = [_head(by), *mcq]
    if board.open_cells:
        opened = _rows(board, by, board.open_cells, board.open_sizes, board.open_asymmetry)
        rows = [[*_head(by), "format"], *[[*r, "mcq"] for r in mcq], *[[*r, "open"] for r in opened]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow([neutralise_cell(x) for x in row])
    return buf.getvalue()


def write_by(board: DomainBoard, by: str, *, as_json: bool, as_csv: bool) -> None:
    if as_json:
        sys.stdout.write(board.model_dump_json(indent=1) + "\n")
    elif as_csv:
        sys.stdout.write(by_csv(board, by))
    else:
        print_by(board, by)

