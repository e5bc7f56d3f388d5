"""The leaderboard's figures, as PNG bytes: Overall and Transfer per target across the window's snapshots with
their bootstrap 95% bands (`trend_png`), and the known-rate of each target by month of occurrence with its
Wilson band, floor, window start and alarm months (`known_rate_png`).

Drawn on a bare `matplotlib.figure.Figure` (no pyplot state), so the status pages can render them in a worker
thread; a snapshot without a defined value is a gap, never a 0.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clkt.report.cutoff_curve import TargetKnowledge
from clkt.report.leaderboard_data import Leaderboard, LeaderRow
from clkt.report.metric_table import PAIR_METRICS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["known_rate_png", "trend_png"]


def _label(r: LeaderRow, rows: Sequence[LeaderRow]) -> str:
    parts = [r.target]
    if len({x.strategy for x in rows}) > 1:
        parts.append(r.strategy)
    if len({x.scorer for x in rows}) > 1:
        parts.append(r.scorer)
    return " · ".join(parts)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def trend_png(board: Leaderboard) -> bytes:
    from matplotlib.figure import Figure

    periods = [s.period for s in board.snapshots]
    fig = Figure(figsize=(max(9.0, 0.5 * len(periods) + 6), 4.2))
    metrics = list(PAIR_METRICS)
    axes = fig.subplots(1, len(metrics), sharex=True, squeeze=False)[0]
    x = list(range(len(periods)))
    for ax, m in zip(axes, metrics, strict=True):
        metric = m.key
        for r in board.rows:
            cols = {c.period: c for c in r.per_snapshot}
            ys, lo, hi = [], [], []
            for p in periods:
                c = cols.get(p)
                est = c.metric(metric) if c is not None and c.status == "ok" else None
                v = est.value if est is not None and est.value is not None else math.nan
                ys.append(100 * v)
                ci = est.ci if est is not None and est.ci is not None else (math.nan, math.nan)
                lo.append(100 * ci[0])
                hi.append(100 * ci[1])
            (line,) = ax.plot(x, ys, marker="o", markersize=3, label=_label(r, board.rows))
            ax.fill_between(x, lo, hi, alpha=0.18, color=line.get_color(), linewidth=0)
        ax.set_title(f"{m.label} (%) per snapshot, 95% band", fontsize=9)
        ax.set_ylim(0, 100)
        ax.set_xticks(x, periods, rotation=60, fontsize=7)
        ax.grid(alpha=0.3)
    if board.rows:
        axes[0].legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def known_rate_png(curves: Sequence[TargetKnowledge]) -> bytes:
    from matplotlib.figure import Figure

    months = sorted({m.month for c in curves for m in c.months})
    fig = Figure(figsize=(max(9.0, 0.3 * len(months) + 6), 4.2))
    ax = fig.subplots()
    pos = {m: i for i, m in enumerate(months)}
    for c in curves:
        xs = [pos[m.month] for m in c.months]
        (line,) = ax.plot(xs, [100 * (m.rate or 0) for m in c.months], marker="o", markersize=3, label=c.target)
        ax.fill_between(xs, [100 * (m.ci or (0, 0))[0] for m in c.months], [100 * (m.ci or (0, 0))[1] for m in c.months],
                        alpha=0.15, color=line.get_color(), linewidth=0)
        if c.floor is not None:
            ax.axhline(100 * c.floor, linestyle=":", color=line.get_color(), linewidth=1)
        alarm = [pos[m] for m in c.alarm_months]
        if alarm:
            ax.scatter(alarm, [100 * next(x.rate or 0 for x in c.months if x.month == months[i]) for i in alarm], s=60,
                       facecolors="none", edgecolors="red", linewidths=1.5, zorder=5)
        if c.window_start is not None:
            start = c.window_start.strftime("%Y-%m")
            inside = [i for m, i in pos.items() if m >= start]
            if inside:
                ax.axvline(inside[0] - 0.5, color=line.get_color(), linestyle="--", linewidth=1)
    ax.set_title("Known-rate by month of occurrence (%), Wilson 95% band; dotted: floor; dashed: window start; red: alarm",
                 fontsize=9)
    ax.set_ylim(0, 100)
    ax.set_xticks(range(len(months)), months, rotation=60, fontsize=7)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)
