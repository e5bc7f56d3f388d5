"""Launch Library 2's settings (`[sources.launchlibrary]`): its real endpoint, its documented rate, its options."""

from __future__ import annotations

from pydantic import Field

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["LaunchLibraryOptions", "LaunchLibrarySettings"]


class LaunchLibraryOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=100)  # launches per list page (Launch Library 2's maximum: 100)


class LaunchLibrarySettings(SourceSettings):
    """Launch Library 2 (spaceflight, The Space Devs): 15 requests an hour without a key, a key (a Patreon
    token) from the environment raises it; the data is free to use and share, attribution encouraged."""

    base_url: str = "https://ll.thespacedevs.com/2.2.0"
    rate_per_s: RatePerS = 15 / 3600
    burst: Burst = 1
    concurrency: Concurrency = 1
    api_key_env: str | None = "LAUNCHLIBRARY_API_KEY"
    user_agent: str | None = "clkt/0.1 ( clkt@example.org )"
    timeout_s: float = Field(default=60.0, gt=0, le=600)
    poll_interval_s: float = Field(default=6 * 3600.0, gt=0, le=7 * 86400)
    # a launch's status turns final hours to days after its net (a partial failure is assessed later): re-read 3 days
    overlap_hours: float = Field(default=72.0, ge=0, le=24 * 366)
    options: LaunchLibraryOptions = Field(default_factory=LaunchLibraryOptions)
