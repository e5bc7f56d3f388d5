"""`clkt leaderboard --compare-strategies A,B`: two strategies of one target side by side on the same questions
(`clkt.report.strategy_compare`): each strategy's Learn (base -> injected), then every line of the comparison
(Learn, Overall, Transfer, ...) with the paired difference, its interval and exact McNemar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clkt.cli.common import fail, plain

if TYPE_CHECKING:
    from rich.table import Table

    from clkt.report.leaderboard_data import Estimate, StrategyComparison

__all__ = ["parse_pair", "strategy_tables"]


def parse_pair(value: str | None, *, by: str | None) -> tuple[str, str] | None:
    """The option's two names (None when not given); a malformed value or `--by` beside it: one line, exit 2."""
    if value is None:
        return None
    if by is not None:
        raise fail("--by with --compare-strategies: choose one")
    from clkt.report.leaderboard_data import LeaderboardError
    from clkt.report.strategy_compare import parse_strategy_pair

    try:
        return parse_strategy_pair(value)
    except LeaderboardError as e:
        raise fail(str(e)) from None


def _pct(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    ci = f" [{100 * e.ci[0]:.1f}, {100 * e.ci[1]:.1f}]" if e.ci else ""
    return f"{100 * e.value:.1f}{ci}"


def _pts(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    return f"{100 * e.value:+.1f}" + (f" [{100 * e.ci[0]:+.1f}, {100 * e.ci[1]:+.1f}]" if e.ci else "")


def strategy_tables(c: StrategyComparison) -> list[Table]:
    from rich.table import Table

    a, b = c.strategy_a, c.strategy_b
    kept = any(e is not None for e in c.kept)  # a column only when a strategy's jobs answered a locality split
    learn = Table("strategy", "n", "base %", "injected % [CI]", "gain pts [CI]", "gained / lost, McNemar p", "learned",
                  *(["kept % [CI] (n right before; its own jobs, not paired)"] if kept else []),
                  title=f"Learn of {c.target} ({c.scorer}), base -> injected, on the {c.learn[0].n if c.learn else 0} "
                        f"train-language questions answered under both {a} and {b}")
    for i, (name, le) in enumerate(zip((a, b), c.learn, strict=False)):
        base = "n/a" if le.base is None else f"{100 * le.base:.1f}"
        k = c.kept[i] if i < len(c.kept) else None
        learn.add_row(plain(name), str(le.n), base, _pct(le.injected), _pts(le.gain), f"{le.gained} / {le.lost}, p={le.p_value:.3g}",
                      "yes" if le.learned else "no", *([f"{_pct(k)} ({k.n})" if k is not None else "n/a"] if kept else []))
    side = Table("metric", "scope", f"{a} % [CI]", f"{b} % [CI]", "a - b pts [CI]", "n", "McNemar a only / b only, p", "verdict",
                 title=f"{a} vs {b} on {c.target} ({c.scorer}): on the {c.questions} questions ({c.entities} entities, "
                       f"{len(c.snapshots)} snapshots, {c.question_pairs} question x pair units) valid for both; "
                       "paired bootstrap over entities" + ("; too few questions for a verdict" if c.too_few else ""))
    for line in c.lines:
        p = "n/a" if line.p_value is None else f"{line.p_value:.3g}"
        side.add_row(line.metric, line.scope, _pct(line.a), _pct(line.b), _pts(line.diff), str(line.diff.n),
                     f"{line.a_only} / {line.b_only}, p={p}", plain(line.verdict))
    return [learn, side]
