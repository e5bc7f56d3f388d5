"""A leaderboard window reads each entity's own date, not its snapshot's period (`clkt.snapshots.carry`).

A snapshot may hold entities carried in from earlier periods. The window [start of `--from`, end of `--to`) therefore
takes every snapshot whose period starts inside it (as before) and every snapshot that holds an entity carried in
from a period inside it; of those snapshots it counts only the entities whose own period starts inside the window:
the others are added to the window's exclusions for every target (so the pooling, the comparisons and the
predictions leave them out the way they leave out what a target recognised). A window over every period changes
nothing; an entity counts in exactly one window cell, its own period's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.snapshots.period import Period, PeriodError, parse_period
from storage.engine import Session
from storage.leaderboard import WindowData, WindowSnapshot
from storage.placements import Placement, placements_in

__all__ = ["in_own_window", "with_carried_snapshots", "with_own_dates"]


def in_own_window(label: str, q: LeaderboardQuery, start: Period | None, end: Period | None) -> bool:
    """Whether the period `label` (an entity's own) starts inside the window; a label of another cadence counts."""
    try:
        p = parse_period(label, q.cadence, rolling_days=q.rolling_days)
    except PeriodError:
        return True
    return (start is None or p.start >= start.start) and (end is None or p.start < end.end)


async def with_carried_snapshots(
    session: Session, q: LeaderboardQuery, chosen: Sequence[WindowSnapshot], every: Sequence[WindowSnapshot],
    start: Period | None, end: Period | None,
) -> list[WindowSnapshot]:
    """`chosen` and the snapshots of `every` that hold an entity carried in from a period inside the window."""
    have = {s.id for s in chosen}
    carried = await placements_in(session, spec=q.spec, carried_only=True)
    extra = {p.snapshot_id for p in carried if p.snapshot_id not in have and in_own_window(p.own_period, q, start, end)}
    out = [*chosen, *(s for s in every if s.id in extra)]
    return sorted(out, key=lambda s: (s.period, s.built_at))


async def with_own_dates(
    session: Session, q: LeaderboardQuery, data: WindowData, start: Period | None, end: Period | None,
) -> WindowData:
    """`data` with the entities whose own period is outside the window excluded for every target."""
    placed: list[Placement] = await placements_in(session, spec=q.spec, snapshot_ids=[s.id for s in data.snapshots])
    out: dict[str, set[int]] = {}
    for p in placed:
        if not in_own_window(p.own_period, q, start, end):
            out.setdefault(p.snapshot_id, set()).add(p.entity_id)
    if not out:
        return data
    targets = {t for _, t in data.ready} | {j.target for j in data.jobs}
    excl = dict(data.exclusions)
    for sid, ents in out.items():
        for t in targets:
            excl[(sid, t)] = frozenset(excl.get((sid, t), frozenset()) | ents)
    return replace(data, exclusions=excl)
