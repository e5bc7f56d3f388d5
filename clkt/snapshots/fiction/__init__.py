"""Fictional entities, per kind of facts: the control split's makers (and the replay stream's, which reuses them).

Each domain folder's `control.py` (`clkt/domains/<name>/`) registers its kinds' `FictionalKind`s once
(`kinds.FICTIONAL_KINDS`); `_namer` invents the names they share. A domain's kinds are its `DocumentKind`s
(`clkt.documents.registry.kinds_of_domain`), whose makers take turns. A new kind is its domain folder.
"""

from __future__ import annotations

import random
from datetime import date, datetime
from typing import Any

from clkt.documents.registry import kinds_of_domain, load_modules
from clkt.domains import import_side
from clkt.errors import SnapshotError
from clkt.facts import EntityFacts
from clkt.snapshots.fiction._namer import Namer
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__ = ["FICTIONAL_KINDS", "FictionalKind", "Made", "Namer", "fictional_entity", "fictional_timed", "makers_of"]


def _maker(kind: str) -> FictionalKind[Any]:
    entry = FICTIONAL_KINDS.find(kind)
    if entry is None:
        raise SnapshotError(f"no fictional entities of kind {kind!r}; known: {sorted(FICTIONAL_KINDS.kinds())}")
    return entry


def fictional_entity(kind: str, rng: random.Random, *, start: date, end: date) -> tuple[str, EntityFacts]:
    """One fictional entity of `kind` (a registered kind of facts: "match", "film", "release", "quake",
    "disaster"...), dated in [start, end), drawn from `rng` by the control split's own makers and name pools (the
    replay server's generator mode reuses them for its stream): its name and facts."""
    name, facts, _ = _maker(kind).make(rng, Namer(rng), start, end)
    return name, facts


def fictional_timed(facts: EntityFacts, when: datetime) -> EntityFacts:
    """`facts` of an entity that occurred at `when` (its kind's `FictionalKind.timed`)."""
    timed: EntityFacts = _maker(facts.kind).timed(facts, when)
    return timed


def makers_of(domain: str) -> tuple[FictionalKind[Any], ...]:
    """The makers of `domain`'s kinds, in turn order; `SnapshotError` when the domain has none."""
    kinds = kinds_of_domain(domain)
    if not kinds or any(k not in FICTIONAL_KINDS for k in kinds):
        raise SnapshotError(f"control split: no fictional entities for domain {domain!r}")
    return tuple(_maker(k) for k in kinds)


load_modules(__name__, __path__)
import_side("control")  # each domain folder's control.py
