"""The typed facts of a disasters entity: an earthquake (USGS) or another disaster (GDACS: flood, storm, drought...)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import Field

from clkt.domain_base import Facts

__all__ = ["DisasterFacts", "QuakeFacts"]


class QuakeFacts(Facts):
    kind: Literal["quake"] = "quake"
    title: str
    place: str
    time_utc: datetime
    magnitude: float
    mag_type: str | None = None
    depth_km: float
    latitude: float
    longitude: float
    alert: str | None = None  # PAGER green / yellow / orange / red
    tsunami: bool = False
    felt: int | None = None  # number of felt reports
    mmi: float | None = None
    cdi: float | None = None
    significance: int | None = None
    fatalities: int | None = None
    economic_loss_usd: int | None = None


class DisasterFacts(Facts):
    """A non-seismic disaster (ReliefWeb / GDACS): flood, storm, drought..."""

    kind: Literal["disaster"] = "disaster"
    name: str
    disaster_type: str
    country: str
    countries: list[str] = Field(default_factory=list)
    date: date
    status: str | None = None
    glide: str | None = None
    alert: str | None = None
    deaths: int | None = None
    affected: int | None = None
    summary: str | None = None
