"""The control split's part of each kind of facts: its maker of fictional entities, registered once by the kind's
module in this package (keyed by the facts' `kind`, like `clkt.documents.registry.DocumentKind`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from agents.template.values import Value
from clkt.documents.registry import KindRegistry
from clkt.snapshots.fiction._namer import Namer

__all__ = ["FICTIONAL_KINDS", "FictionalKind", "Made"]

F = TypeVar("F", bound=BaseModel)

# what a maker returns: the entity's name, its facts and, per name slot, the fictional distractor candidates
Made = tuple[str, F, dict[str, tuple[Value, ...]]]


def _as_drawn(facts: F, _when: datetime) -> F:
    return facts


@dataclass(frozen=True, slots=True, kw_only=True)
class FictionalKind(Generic[F]):
    """`make(rng, namer, start, end)`: one fictional entity dated in [start, end), drawn from `rng` only;
    `timed(facts, when)`: its facts once the replay stream says it occurred at `when` (a quake's time, a match's
    kick-off; unchanged for a kind that states no moment)."""

    kind: str
    make: Callable[[random.Random, Namer, date, date], Made[F]]
    timed: Callable[[F, datetime], F] = field(default=_as_drawn)


FICTIONAL_KINDS: KindRegistry[FictionalKind[Any]] = KindRegistry("fictional entity maker")
