"""disasters: earthquakes from USGS (public domain; no key) and other disasters from GDACS alerts (no key; its terms)."""

from __future__ import annotations

from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.disasters.settings import GdacsOptions, GdacsSettings, UsgsOptions, UsgsSettings
from clkt.domains.spec import DomainSpec

__all__ = ["SPEC", "DisasterFacts", "GdacsOptions", "GdacsSettings", "QuakeFacts", "UsgsOptions", "UsgsSettings"]

SPEC = DomainSpec(
    name="disasters", package=__name__, facts=QuakeFacts, source="usgs", settings=UsgsSettings,
    more_sources=(("gdacs", GdacsSettings),), quota=20,
    slots=("time", "place", "magnitude", "depth", "alert", "tsunami", "felt", "fatalities", "intensity", "latitude"),
    more_kinds=((DisasterFacts, ("date", "disaster_type", "country", "status", "deaths", "affected", "glide")),),
)
