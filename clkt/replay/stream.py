"""The living upstream's timeline: which fictional entity each source publishes when (replay `mode = "generator"`).

Every source has its own stream of entities numbered 0, 1, 2... from a fixed origin (2000-01-01 UTC). Entity
`i` occurs inside the i-th slot of `7 days / entities_per_week` (at a seeded point of it, so the occurrence
times rise with the index and no two entities share a moment) and is published a little later, as the real
API would list it: a film or an album the day it is released, a match once it is over, a quake minutes after,
a disaster alert hours after it began (always within a day: the pollers' default overlap). An entity is
visible once it is published by the process's clock (`clkt.clock.now()`, so it follows a simulated calendar)
and if it occurred at or after the stream's start.

Everything is a pure function of (seed, source, index): nothing is stored, so memory stays flat however long
the stream runs (a small LRU keeps the last facts drawn). Ids encode the index (and a tag of the seed), so a
detail route finds its entity again from the id alone, and two entities never share one. The facts are drawn
by the control split's makers (`clkt.snapshots.fiction.fictional_entity`: invented names of people, teams,
venues, labels and towns, plausible numbers), dated on the entity's day.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TypeVar

from pydantic import BaseModel

from clkt.facts import EntityFacts
from clkt.replay.domains import DomainReplay, domain_replays
from clkt.snapshots.fiction import fictional_entity, fictional_timed
from clkt.sources.registry import SOURCE_TYPES

__all__ = ["KIND_OF", "ORIGIN", "SOURCES", "EntityStream", "Generated"]

F = TypeVar("F", bound=BaseModel)

ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)
SOURCES = tuple(SOURCE_TYPES)  # the sources (`clkt.sources.registry`)
KIND_OF = {name: cls.kind for name, cls in SOURCE_TYPES.items()}  # the kind of facts each source's entities have


def _lag_s(source: str) -> tuple[int, int]:
    """(least, most) seconds after it occurred that an entity of `source` is listed (its domain's `replay.py`)."""
    return _replay(source).lag_s


def _replay(source: str) -> DomainReplay:
    replay = domain_replays().get(source)
    if replay is None:
        raise KeyError(f"no replay declares source {source!r}; known: {sorted(domain_replays())}")
    return replay


@dataclass(frozen=True, kw_only=True)
class Generated:
    """Entity `index` of `source`: when it occurred and was published, its id, and its fictional facts."""

    source: str
    index: int
    external_id: str
    occurred: datetime
    published: datetime
    name: str
    facts: EntityFacts
    rng_seed: int  # for the payload's own seeded details (ids of people, popularity...)

    def rng(self, purpose: str) -> random.Random:
        return random.Random(f"{self.rng_seed}/{purpose}")

    def facts_as(self, cls: type[F]) -> F:
        """The facts, as the kind `cls` its source yields (a payload of that source's shape reads them)."""
        if not isinstance(self.facts, cls):
            raise TypeError(f"{self.source} entity {self.external_id} has {self.facts.kind} facts, not {cls.__name__}")
        return self.facts


class EntityStream:
    """The streams of every source for one seed and rate; `start`: nothing occurred before it is listed."""

    def __init__(self, *, seed: int, entities_per_week: float, start: datetime | None = None) -> None:
        if not entities_per_week > 0 or not math.isfinite(entities_per_week):
            raise ValueError(f"entities_per_week must be a positive number, got {entities_per_week}")
        if start is not None and start.tzinfo is None:
            raise ValueError("the stream's start must be timezone-aware")
        self.seed = seed
        self.tag = seed % 1000
        self.per_week = float(entities_per_week)
        self.step_s = 7 * 86400 / self.per_week
        self.start = (start or ORIGIN).astimezone(UTC)
        self._draw = lru_cache(maxsize=2048)(self._generate)

    # --- the timeline ------------------------------------------------------------------------------

    def unit(self, source: str, index: int, purpose: str) -> float:
        """A number in [0, 1) drawn from (seed, source, index, purpose) alone."""
        h = hashlib.sha256(f"clkt-stream/{self.seed}/{source}/{index}/{purpose}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64

    def occurred(self, source: str, index: int) -> datetime:
        at = (index + 0.05 + 0.9 * self.unit(source, index, "at")) * self.step_s
        return ORIGIN + timedelta(seconds=round(at))

    def published(self, source: str, index: int) -> datetime:
        lo, hi = _lag_s(source)
        return self.occurred(source, index) + timedelta(seconds=round(lo + (hi - lo) * self.unit(source, index, "lag")))

    def first_at_or_after(self, source: str, t: datetime) -> int:
        """The first index that occurred at or after `t` (and not before the stream's start)."""
        t = max(t, self.start)
        i = max(0, math.floor((t - ORIGIN).total_seconds() / self.step_s))
        return i if self.occurred(source, i) >= t else i + 1

    def last_before(self, source: str, t: datetime) -> int:
        """The last index that occurred strictly before `t` (-1 when none)."""
        i = math.floor((t - ORIGIN).total_seconds() / self.step_s)
        if i < 0:
            return -1
        return i if self.occurred(source, i) < t else i - 1

    def occurred_between(self, source: str, lo: datetime, hi: datetime, *, now: datetime) -> Iterator[int]:
        """Indices that occurred in [lo, hi) and are visible at `now`, oldest first (lazily)."""
        first = self.first_at_or_after(source, lo)
        last = self.last_before(source, min(hi, now))
        for i in range(first, last + 1):
            if self.published(source, i) <= now:
                yield i

    def count_between(self, source: str, lo: datetime, hi: datetime, *, now: datetime) -> int:
        """How many `occurred_between` yields, without walking the whole range (only its unpublished tail)."""
        first = self.first_at_or_after(source, lo)
        last = self.last_before(source, min(hi, now))
        if last < first:
            return 0
        tail = math.ceil(_lag_s(source)[1] / self.step_s) + 1  # only the last few can still be unpublished
        hidden = sum(1 for i in range(max(first, last - tail), last + 1) if self.published(source, i) > now)
        return last - first + 1 - hidden

    def nth_between(self, source: str, lo: datetime, hi: datetime, *, now: datetime, offset: int, limit: int) -> list[int]:
        """`limit` indices of `occurred_between` from its `offset`-th on (skipping without generating)."""
        first = self.first_at_or_after(source, lo)
        last = self.last_before(source, min(hi, now))
        tail_start = last - (math.ceil(_lag_s(source)[1] / self.step_s) + 1)
        out: list[int] = []
        i, seen = first, 0
        # before the tail every index is published: jump straight to the offset
        if offset > 0 and first + offset < tail_start:
            i, seen = first + offset, offset
        while i <= last and len(out) < limit:
            if self.published(source, i) <= now:
                if seen >= offset:
                    out.append(i)
                seen += 1
            i += 1
        return out

    # --- ids ---------------------------------------------------------------------------------------

    def external_id(self, source: str, index: int) -> str:
        return _replay(source).id_in(self, index)

    def index_of(self, source: str, external_id: str) -> int | None:
        """The index an id names in this stream, or None (another seed's, or no id of ours)."""
        replay = domain_replays().get(source)
        return None if replay is None else replay.index_of(external_id, stream=self)

    # --- the entities ------------------------------------------------------------------------------

    def visible(self, source: str, index: int, *, now: datetime) -> bool:
        return index >= 0 and self.occurred(source, index) >= self.start and self.published(source, index) <= now

    def entity(self, source: str, index: int) -> Generated:
        return self._draw(source, index)

    def _generate(self, source: str, index: int) -> Generated:
        occurred = self.occurred(source, index)
        day = occurred.date()
        seed = int.from_bytes(hashlib.sha256(f"clkt-stream/{self.seed}/{source}/{index}/facts".encode()).digest()[:8], "big")
        name, facts = fictional_entity(KIND_OF[source], random.Random(seed), start=day, end=day + timedelta(days=1))
        facts = fictional_timed(facts, occurred)
        return Generated(
            source=source, index=index, external_id=self.external_id(source, index), occurred=occurred,
            published=self.published(source, index), name=name, facts=facts, rng_seed=seed,
        )
