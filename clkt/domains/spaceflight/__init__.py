"""spaceflight: launches with a final outcome from Launch Library 2 (The Space Devs; 15 requests an hour without
a key; free to use and share, attribution encouraged)."""

from __future__ import annotations

from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.domains.spaceflight.settings import LaunchLibraryOptions, LaunchLibrarySettings
from clkt.domains.spec import DomainSpec

__all__ = ["SPEC", "LaunchFacts", "LaunchLibraryOptions", "LaunchLibrarySettings"]

SPEC = DomainSpec(
    name="spaceflight", package=__name__, facts=LaunchFacts, source="launchlibrary", settings=LaunchLibrarySettings,
    quota=20, slots=("net", "provider", "rocket", "outcome", "mission_type", "orbit", "pad", "location"),
)
