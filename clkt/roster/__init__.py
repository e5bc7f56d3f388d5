"""Targets over time: the targets a spec has had, and the frozen snapshots each one is valid on.

`startup.prepare_targets` records the configuration's targets when the daemon starts (and probes a target added
after a freeze on the snapshots in its window: `window`); `service.LateTargetService` turns what it recognised
into its exclusions, makes the snapshot ready for it and enqueues its GPU jobs; `exclusions` names them as the
snapshot's files do, for the jobs.
"""

from __future__ import annotations

from clkt.roster.exclusions import excluded_public_ids
from clkt.roster.service import LateTargetService, exclusion_reasons
from clkt.roster.startup import RosterStart, check_worker_targets, identities, prepare_targets
from clkt.roster.window import fresh_from, in_window, known_fresh_from

__all__ = [
    "LateTargetService",
    "RosterStart",
    "check_worker_targets",
    "excluded_public_ids",
    "exclusion_reasons",
    "fresh_from",
    "identities",
    "in_window",
    "known_fresh_from",
    "prepare_targets",
]
