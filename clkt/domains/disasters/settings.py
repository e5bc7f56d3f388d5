"""The disasters sources' settings (`[sources.usgs]`, `[sources.gdacs]`): their real endpoints, their documented
rates, their options."""

from __future__ import annotations

from pydantic import Field

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["GdacsOptions", "GdacsSettings", "UsgsOptions", "UsgsSettings"]


class UsgsOptions(SourceOptions):
    page_size: int = Field(default=200, ge=1, le=20000)  # events per request
    min_magnitude: float = Field(default=5.5, ge=-2, le=10)  # smaller earthquakes are not asked for


class GdacsOptions(SourceOptions):
    skip_types: list[str] = Field(default_factory=lambda: ["EQ"], max_length=20)  # EQ: USGS has the earthquakes


class UsgsSettings(SourceSettings):
    """USGS earthquakes (FDSN event service): no key, public domain."""

    base_url: str = "https://earthquake.usgs.gov/fdsnws/event/1"
    rate_per_s: RatePerS = 2.0
    burst: Burst = 2
    concurrency: Concurrency = 2
    options: UsgsOptions = Field(default_factory=UsgsOptions)


class GdacsSettings(SourceSettings):
    """GDACS (disasters, an RSS feed): no key."""

    base_url: str = "https://www.gdacs.org"
    rate_per_s: RatePerS = 0.5
    burst: Burst = 1
    concurrency: Concurrency = 1
    options: GdacsOptions = Field(default_factory=GdacsOptions)
