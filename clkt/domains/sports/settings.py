"""TheSportsDB's settings (`[sources.thesportsdb]`): its real endpoint, its documented rate, its options."""

from __future__ import annotations

from pydantic import Field, field_validator

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["TheSportsDbOptions", "TheSportsDbSettings"]


def _default_leagues() -> list[int | str]:
    return ["4328", "4424", "4387"]


class TheSportsDbOptions(SourceOptions):
    leagues: list[int | str] = Field(default_factory=_default_leagues, min_length=1, max_length=100)  # EPL, MLB, NBA

    @field_validator("leagues")
    @classmethod
    def _ids(cls, v: list[int | str]) -> list[int | str]:
        bad = [x for x in v if not str(x).isdigit()]
        if bad:
            raise ValueError(f"league ids are numbers (e.g. 4328), got {bad[:3]}")
        return v


class TheSportsDbSettings(SourceSettings):
    """TheSportsDB (sports): the free key "123" (30 requests/min), a premium key from the environment."""

    base_url: str = "https://www.thesportsdb.com/api/v1/json"
    rate_per_s: RatePerS = 0.5
    burst: Burst = 1
    concurrency: Concurrency = 1
    api_key_env: str | None = "THESPORTSDB_API_KEY"
    default_api_key: str | None = "123"
    options: TheSportsDbOptions = Field(default_factory=TheSportsDbOptions)
