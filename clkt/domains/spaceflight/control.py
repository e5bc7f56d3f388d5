"""Fictional launches: an invented provider, rocket, pad and spaceport; real mission types and orbits."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time

from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.snapshots.fiction._namer import Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__: list[str] = []

_PROVIDER = ("Aerospace", "Launch Systems", "Space Industries", "Orbital")
_SITE = ("Spaceport", "Launch Centre", "Cosmodrome")
_TYPES = ("Communications", "Earth Science", "Test Flight", "Technology")
_ORBITS = ("Low Earth Orbit", "Sun-Synchronous Orbit", "Geostationary Transfer Orbit")


def _rocket(nm: Namer, rng: random.Random) -> str:
    return f"{nm.word(2)}-{rng.randint(1, 9)}"


def _launch(rng: random.Random, nm: Namer, start: date, end: date) -> Made[LaunchFacts]:
    rocket, mission = _rocket(nm, rng), f"{nm.word(2)}-{rng.randint(1, 40)}"
    when = datetime.combine(day_in(rng, start, end), time(rng.randrange(24), rng.randrange(60)), tzinfo=UTC)
    facts = LaunchFacts(
        name=f"{rocket} | {mission}", net=when, outcome=rng.choice(("success", "success", "failure")),
        provider=nm.suffixed(_PROVIDER, place=False), rocket=rocket, mission=mission,
        mission_type=rng.choice(_TYPES), orbit=rng.choice(_ORBITS), pad=f"Launch Complex {rng.randint(2, 60)}",
        location=nm.suffixed(_SITE),
    )
    pools = {"provider": nm.pool(lambda: nm.suffixed(_PROVIDER, place=False)),
             "rocket": nm.pool(lambda: _rocket(nm, rng)), "location": nm.pool(lambda: nm.suffixed(_SITE))}
    return facts.name, facts, pools


def _flown(facts: LaunchFacts, when: datetime) -> LaunchFacts:
    return facts.model_copy(update={"net": when.replace(microsecond=0)})


FICTIONAL_KINDS.register(FictionalKind(kind="launch", make=_launch, timed=_flown))
