"""Carry-over: the ready entities of earlier periods that a snapshot is offered besides its own period's.

An entity whose own period is done without it (it became ready after the period froze, it was over the period's
quotas, or the period never filled and the calendar moved on) waits, ready and in no snapshot, and is offered to the
next snapshot that freezes. Its own period is done when that period has a frozen snapshot, or when it ended before
the last closed period began (the builder service only builds the last closed period and the current one, so an
older period that never froze is never built). A period that is the last closed one and still waits for its quotas
keeps its entities: a current period built early never takes them.

What is offered must still qualify for the snapshot it joins: it passes the temporal gate of every target of the
spec as configured now (`clkt.cutoff.eligible`; a target added since its own period may be too recent for it) and,
like every candidate, the selection's probe check (`clkt.snapshots.select`: probed clean by every target, so a
target added since must have been asked about it and not know it). Within each domain the carried entities are
taken first, by the same seeded order as the period's own, then the period's own fill what is left of the quota;
what does not fit waits for the next snapshot.

An entity is offered while the period being built starts at most `snapshot.carry_max_days` after its own date;
past that it is dropped as `expired` by the freeze that gives up on it (in the freezing transaction). Where an
entity landed is the store's `snapshot_entity` (`storage.placements`): one row per spec and entity, so no entity
lands twice, whichever builders race.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from clkt.config import SnapshotSettings, SpecSettings
from clkt.cutoff import cutoff_for, eligible
from clkt.snapshots.period import Period, period_of, previous_period
from storage.engine import Session
from storage.placements import placed_in_other_periods, unplaced_ready_before
from storage.snapshots import CandidateEntity, candidate_entities, frozen_periods

__all__ = ["CarryOffer", "carry_offer", "own_period"]


@dataclass(frozen=True, kw_only=True)
class CarryOffer:
    """What a build of `period` is offered from earlier periods, and what it gives up on."""

    entities: list[CandidateEntity] = field(default_factory=list)  # earlier, ready, in no snapshot, their period done
    own_periods: dict[int, str] = field(default_factory=dict)  # entity row -> its own period's label
    expired: list[int] = field(default_factory=list)  # waited past `carry_max_days`: dropped by this freeze
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> entities not offered


def own_period(occurred_at: datetime, snap: SnapshotSettings) -> Period:
    """The period of an entity's own date in the spec's cadence."""
    return period_of(occurred_at, snap.cadence, rolling_days=snap.rolling_days)


def _done(p: Period, *, frozen: set[str], given_up_before: datetime, rolling: bool) -> bool:
    return rolling or p.label in frozen or p.end <= given_up_before


async def carry_offer(
    session: Session, *, spec: SpecSettings, snap: SnapshotSettings, period: Period, now: datetime
) -> CarryOffer:
    """The earlier entities offered to a build of `period` at `now` (see the module docstring)."""
    window_start = period.start - timedelta(days=snap.carry_max_days)
    expired = await unplaced_ready_before(session, spec=spec.name, before=window_start)
    if snap.carry_max_days == 0:
        return CarryOffer(expired=expired)
    domains = [d.value for d in spec.domains]
    earlier = await candidate_entities(session, domains=domains, start=window_start, end=period.start)
    placed = await placed_in_other_periods(session, spec=spec.name, period=period.label)  # a rebuild re-offers its own
    frozen = await frozen_periods(session, spec.name)
    current = period_of(now, snap.cadence, rolling_days=snap.rolling_days)
    given_up_before = previous_period(current).start
    cutoffs = [cutoff_for(t) for t in spec.targets]
    offered: list[CandidateEntity] = []
    own: dict[int, str] = {}
    excluded: dict[str, int] = {}
    for e in earlier:
        if e.id in placed:
            continue
        p = own_period(e.occurred_at, snap)
        if not _done(p, frozen=frozen, given_up_before=given_up_before, rolling=snap.cadence == "rolling"):
            continue  # its own period may still be built: it waits for it
        if not all(eligible(e.occurred_at, c, spec.temporal_buffer_days) for c in cutoffs):
            why = "carried: before a target's cutoff + buffer"
            excluded[why] = excluded.get(why, 0) + 1
            continue
        offered.append(e)
        own[e.id] = p.label
    return CarryOffer(entities=offered, own_periods=own, expired=expired, excluded=excluded)
