"""TMDB's settings (`[sources.tmdb]`): its real endpoint, its documented rate, its options."""

from __future__ import annotations

from pydantic import Field

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["TmdbOptions", "TmdbSettings"]


class TmdbOptions(SourceOptions):
    language: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[A-Z]{2})?$")  # None: TMDB's default


class TmdbSettings(SourceSettings):
    """TMDB (movies): a key is required (free, non-commercial; attribution required)."""

    base_url: str = "https://api.themoviedb.org/3"
    rate_per_s: RatePerS = 20.0
    burst: Burst = 20
    concurrency: Concurrency = 8
    api_key_env: str | None = "TMDB_API_KEY"
    options: TmdbOptions = Field(default_factory=TmdbOptions)
