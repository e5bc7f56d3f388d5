"""The typed facts of a spaceflight entity: a launch with a final outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from clkt.domain_base import Facts

__all__ = ["LaunchFacts"]


class LaunchFacts(Facts):
    """An orbital launch attempt with a final outcome (spaceflight), as Launch Library 2 lists it."""

    kind: Literal["launch"] = "launch"
    name: str  # "Falcon 9 Block 5 | Starlink Group 10-40"
    net: datetime  # aware UTC: the launch time
    outcome: Literal["success", "failure", "partial failure"]
    provider: str | None = None
    rocket: str | None = None  # the configuration's full name
    mission: str | None = None
    mission_type: str | None = None
    orbit: str | None = None
    pad: str | None = None
    location: str | None = None
    country_code: str | None = None
    failreason: str | None = None
