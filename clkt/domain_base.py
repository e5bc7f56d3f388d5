"""What a domain's own kernel modules build on: the base of every facts model (`Facts`, with its `kind`
discriminator) and of every source's settings (`SourceSettings`, `SourceOptions`).

A domain package (`clkt.domains.<name>`) imports these, never `clkt.facts` or `clkt.config`, which loop over the
domain registry: so the registry can import the domains without a cycle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clkt.section import Section

__all__ = ["Burst", "Concurrency", "Facts", "FactsModel", "RatePerS", "SourceOptions", "SourceSettings"]


class FactsModel(BaseModel):
    """A part of an entity's facts (a period's score, a cast member) or the facts themselves: frozen, strict keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Facts(FactsModel):
    """An entity's typed facts; each kind sets `kind` to its own literal (the discriminator `clkt.facts` reads)."""

    kind: str


class SourceOptions(Section):
    """A source's own options. No option is a switch: `true` where a number or an id belongs is a mistake, not 1."""

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for k, v in data.items():
                if isinstance(v, bool) or (isinstance(v, list) and any(isinstance(x, bool) for x in v)):
                    raise ValueError(f"{k}: a boolean is not a valid value here")
        return data



# --- what every source has --------------------------------------------------------------------------

RatePerS = Annotated[float, Field(gt=0, le=1000)]
Burst = Annotated[int, Field(ge=1, le=1000)]
Concurrency = Annotated[int, Field(ge=1, le=256)]


class SourceSettings(Section):
    """One domain API. Each source's class below gives `base_url`, `rate_per_s`, `burst` and `concurrency` the
    API's real endpoint and documented limits."""

    enabled: bool = True  # false: the source is not polled
    base_url: str  # the API's endpoint (the replay server replaces it in tests and the demo)
    rate_per_s: RatePerS  # requests per second at most (the API's documented limit)
    burst: Burst = 1  # requests that may go at once before the rate applies
    concurrency: Concurrency = 2  # requests in flight at once
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    default_api_key: str | None = None  # a documented public key (TheSportsDB's "123"), not a secret
    user_agent: str | None = None  # the User-Agent header (None: the HTTP client's)
    timeout_s: float = Field(default=20.0, gt=0, le=600)  # one request
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)  # larger: a skipped record
    poll_interval_s: float = Field(default=900.0, gt=0, le=7 * 86400)  # how often the source is asked for new records
    lookback_days: int = Field(default=14, ge=1, le=3650)  # first window when no cursor exists
    overlap_hours: float = Field(default=24.0, ge=0, le=24 * 366)  # re-read this much before the watermark
    breaker_failures: int = Field(default=5, ge=1, le=1000)  # failures in a row that open the circuit breaker
    breaker_reset_s: float = Field(default=300.0, gt=0, le=86400)  # an open breaker tries again after this long
    options: SourceOptions = Field(default_factory=SourceOptions)  # each source's own, typed
