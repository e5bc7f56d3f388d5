"""Where every entity is, per month of its own date: in the pipeline, ready (its period still open), frozen in its
own period's snapshot, carried into a later one, waiting to be carried (ready, in no snapshot, its month over), or
dropped with the reason (known by a target, ineligible for the temporal gate, rejected by the checks, failed,
expired past `snapshot.carry_max_days`: `clkt.snapshots.carry`).

The counts come from the store's view `v_entity_accounting` (`storage.placements.accounting_counts`), which gives
each entity exactly one state; here only the view's `ready` is split by the calendar (`waiting` once its month
is over). `clkt status`, the status page and a researcher's SQL read the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from storage.placements import AccountingCount

__all__ = ["PeriodAccounting", "period_accounting"]


class PeriodAccounting(BaseModel):
    """One month of occurrence: how many of its entities are in each state (every entity in exactly one)."""

    month: str  # YYYY-MM (UTC) of the entities' own dates
    pipeline: int = 0  # not ready yet (gate, probe, questions, translation)
    ready: int = 0  # ready, in no snapshot, its month not over: its period's snapshot takes it
    frozen: int = 0  # in its own period's snapshot
    carried: int = 0  # in a later snapshot (carried there)
    waiting: int = 0  # ready, in no snapshot, its month over: the next snapshot that freezes takes it
    dropped: dict[str, int] = Field(default_factory=dict)  # reason -> entities

    @property
    def total(self) -> int:
        return self.pipeline + self.ready + self.frozen + self.carried + self.waiting + sum(self.dropped.values())


def period_accounting(counts: Sequence[AccountingCount], *, now: datetime) -> list[PeriodAccounting]:
    """The view's counts per month, oldest first; `ready` of a month before `now`'s is `waiting`."""
    current = now.strftime("%Y-%m")
    out: dict[str, PeriodAccounting] = {}
    for c in counts:
        row = out.setdefault(c.month, PeriodAccounting(month=c.month))
        if c.state == "dropped":
            reason = c.reason or "other"
            row.dropped[reason] = row.dropped.get(reason, 0) + c.n
        elif c.state == "ready" and c.month < current:
            row.waiting += c.n
        elif c.state in ("pipeline", "ready", "frozen", "carried"):
            setattr(row, c.state, getattr(row, c.state) + c.n)
    return [out[m] for m in sorted(out)]
