"""Fictional quakes (a place in a seismic country, coordinates inside it) and other disasters (an invented name,
a GLIDE number). The domain's makers take turns in this order: a quake, then a disaster."""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, time

from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.disasters.pools import COUNTRIES
from clkt.snapshots.fiction._namer import Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__ = ["fictional_mmi"]

# seismic countries and a rough (lat, lon) box of each, so the coordinates match the place
_QUAKE_COUNTRIES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "Chile": ((-45.0, -18.0), (-74.0, -69.0)), "Peru": ((-17.0, -4.0), (-81.0, -70.0)),
    "Japan": ((31.0, 43.0), (130.0, 145.0)), "Indonesia": ((-10.0, 4.0), (95.0, 140.0)),
    "Mexico": ((15.0, 30.0), (-115.0, -92.0)), "Türkiye": ((36.5, 41.5), (27.0, 44.0)),
    "Philippines": ((5.0, 19.0), (119.0, 127.0)), "New Zealand": ((-46.0, -35.0), (167.0, 178.0)),
}
_DISASTER_TYPES = ("flood", "tropical cyclone", "drought", "landslide", "wild fire", "cold wave", "heat wave")


def fictional_mmi(mag: float, depth_km: float) -> float:
    """A plausible maximum estimated intensity (MMI): it grows with the magnitude, shrinks with the depth
    (M 6.7 at 18 km -> about 8, M 4.6 at 180 km -> about 3), on USGS's 3 decimals. No random draw, so the
    rest of the fictional quake (and every entity after it) is what it was before intensities were added."""
    return round(min(9.6, max(2.0, 1.2 * mag - 2.5 * math.log10(max(depth_km, 5.0)) + 3.0)), 3)


def _quake(rng: random.Random, nm: Namer, start: date, end: date) -> Made[QuakeFacts]:
    country = rng.choice(sorted(_QUAKE_COUNTRIES))
    (lat0, lat1), (lon0, lon1) = _QUAKE_COUNTRIES[country]
    place = nm.quake_place(country)
    mag = round(rng.uniform(4.6, 7.4), 1)
    when = datetime.combine(day_in(rng, start, end), time(rng.randrange(24), rng.randrange(60)), tzinfo=UTC)
    facts = QuakeFacts(
        title=f"M {mag} - {place}", place=place, time_utc=when, magnitude=mag, mag_type="mww",
        depth_km=round(rng.uniform(5, 180), 1), latitude=round(rng.uniform(lat0, lat1), 3),
        longitude=round(rng.uniform(lon0, lon1), 3), alert=rng.choice(("green", "yellow", "orange")),
        tsunami=rng.random() < 0.3, felt=rng.randint(10, 4000), fatalities=rng.randint(0, 40),
    )
    facts = facts.model_copy(update={"mmi": fictional_mmi(facts.magnitude, facts.depth_km)})
    return facts.title, facts, {"place": nm.pool(lambda: nm.quake_place(rng.choice(sorted(_QUAKE_COUNTRIES))))}


def _disaster(rng: random.Random, nm: Namer, start: date, end: date) -> Made[DisasterFacts]:
    country = rng.choice(COUNTRIES)
    kind = rng.choice(_DISASTER_TYPES)
    day = day_in(rng, start, end)
    code = {"flood": "FL", "tropical cyclone": "TC", "drought": "DR", "landslide": "LS", "wild fire": "WF",
            "cold wave": "CW", "heat wave": "HT"}[kind]
    name = f"{nm.word(2)} {kind.title()} {day.year}"
    facts = DisasterFacts(
        name=name, disaster_type=kind, country=country, date=day, status=rng.choice(("past", "alert")),
        deaths=rng.randint(0, 300), affected=rng.randint(2, 900) * 1000,
        glide=f"{code}-{day.year}-{rng.randint(100, 999_000):06d}-{country[:3].upper()}",
    )
    return name, facts, {}


def _struck(facts: QuakeFacts, when: datetime) -> QuakeFacts:
    return facts.model_copy(update={"time_utc": when.replace(microsecond=0)})


FICTIONAL_KINDS.register(FictionalKind(kind="quake", make=_quake, timed=_struck))
FICTIONAL_KINDS.register(FictionalKind(kind="disaster", make=_disaster))
