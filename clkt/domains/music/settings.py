"""The music sources' settings (`[sources.musicbrainz]`, `[sources.deezer]`): their real endpoints, their
documented rates, their options."""

from __future__ import annotations

from pydantic import Field

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["DeezerOptions", "DeezerSettings", "MusicBrainzOptions", "MusicBrainzSettings"]


class MusicBrainzOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=100)  # releases per search page (MusicBrainz's maximum: 100)
    query: str = Field(default="status:official AND primarytype:album", max_length=500)  # Lucene, ANDed to the dates


class DeezerOptions(SourceOptions):
    page_size: int = Field(default=50, ge=1, le=100)  # albums per request
    editorial_id: int | str = Field(default="0")  # 0: Deezer's "all genres" editorial


class MusicBrainzSettings(SourceSettings):
    """MusicBrainz WS/2 (music): no key, 1 request/s, a User-Agent with a contact is mandatory."""

    base_url: str = "https://musicbrainz.org/ws/2"
    rate_per_s: RatePerS = 1.0
    burst: Burst = 1
    concurrency: Concurrency = 1
    user_agent: str | None = "clkt/0.1 ( clkt@example.org )"
    options: MusicBrainzOptions = Field(default_factory=MusicBrainzOptions)


class DeezerSettings(SourceSettings):
    """Deezer (music, a second source): no key."""

    base_url: str = "https://api.deezer.com"
    rate_per_s: RatePerS = 5.0
    burst: Burst = 5
    concurrency: Concurrency = 2
    options: DeezerOptions = Field(default_factory=DeezerOptions)
