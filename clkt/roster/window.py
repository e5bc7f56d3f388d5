"""The window of a target: which frozen snapshots a target added after their freeze can be measured on.

A target added to a running spec is probed on a frozen snapshot only when the snapshot's period lies in its
window: the period starts on or after the target's knowledge cutoff + `spec.temporal_buffer_days` (the temporal
gate's rule, `clkt.cutoff`, applied to the period's first day). Then every entity of the snapshot occurred
after that day, so each passes the gate for the new target as it did for the targets the snapshot was built
for; a snapshot whose period starts earlier is `out_of_window` for it as a whole, even when some of its
entities happen to be late enough (a snapshot is valid for a target on its whole period, or not at all).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from clkt.config import TargetSettings
from clkt.cutoff import cutoff_for, first_eligible_day, lookup_cutoff

__all__ = ["fresh_from", "in_window", "known_fresh_from"]


def fresh_from(target: TargetSettings, buffer_days: int) -> datetime:
    """The first instant an entity is fresh for `target` (UTC midnight of its cutoff + buffer); `ConfigError`
    when its cutoff is unknown (`clkt.cutoff.cutoff_for`)."""
    day = first_eligible_day(cutoff_for(target), buffer_days)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def known_fresh_from(target: TargetSettings, buffer_days: int) -> datetime | None:
    """`fresh_from`, or None when the target's cutoff is neither declared nor in the registry."""
    if target.cutoff is None and not any(lookup_cutoff(k) for k in (target.model, target.family or "", target.name) if k):
        return None
    return fresh_from(target, buffer_days)


def in_window(period_start: date, target: TargetSettings, buffer_days: int) -> bool:
    """The snapshot whose period starts on `period_start` lies in `target`'s window (see the module docstring)."""
    return period_start >= first_eligible_day(cutoff_for(target), buffer_days)
