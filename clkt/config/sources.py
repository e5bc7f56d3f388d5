"""The domain APIs (`[sources.<name>]`): one settings class per source, with its real endpoint, its documented
limits and its typed `options`, each written here once.

`SourceSettings` is what every source has (politeness, timeouts, polling, breaker); each source's class
sets its own defaults and its `options` model (`[sources.<name>.options]`). `SourcesSettings` has one field
per source, so an unknown `[sources.<name>]` table is refused by name and a `[sources.<name>]` table
overrides that source's defaults key by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from clkt.config._base import Section

__all__ = [
    "ArxivOptions",
    "ArxivSettings",
    "DeezerOptions",
    "DeezerSettings",
    "GdacsOptions",
    "GdacsSettings",
    "LaunchLibraryOptions",
    "LaunchLibrarySettings",
    "MusicBrainzOptions",
    "MusicBrainzSettings",
    "SourceOptions",
    "SourceSettings",
    "SourcesSettings",
    "TheSportsDbOptions",
    "TheSportsDbSettings",
    "TmdbOptions",
    "TmdbSettings",
    "UsgsOptions",
    "UsgsSettings",
]


# --- typed options per source (`[sources.<name>.options]`) ------------------------------------------

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


class TmdbOptions(SourceOptions):
    language: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[A-Z]{2})?$")  # None: TMDB's default


class MusicBrainzOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=100)  # releases per search page (MusicBrainz's maximum: 100)
    query: str = Field(default="status:official AND primarytype:album", max_length=500)  # Lucene, ANDed to the dates


class DeezerOptions(SourceOptions):
    page_size: int = Field(default=50, ge=1, le=100)
    editorial_id: int | str = Field(default="0")  # 0: Deezer's "all genres" editorial


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


class UsgsOptions(SourceOptions):
    page_size: int = Field(default=200, ge=1, le=20000)
    min_magnitude: float = Field(default=5.5, ge=-2, le=10)


class GdacsOptions(SourceOptions):
    skip_types: list[str] = Field(default_factory=lambda: ["EQ"], max_length=20)  # EQ: USGS has the earthquakes


class ArxivOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=2000)  # entries per query (arXiv asks for slices of at most 2000)
    # the search, ANDed to the submission window (arXiv's query syntax: cat:, au:, ti:, abs:, AND / OR / ANDNOT)
    query: str = Field(default="cat:cs.CL OR cat:cs.LG OR cat:astro-ph.EP", min_length=1, max_length=500)


class LaunchLibraryOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=100)  # launches per list page (Launch Library 2's maximum: 100)


# --- what every source has --------------------------------------------------------------------------

RatePerS = Annotated[float, Field(gt=0, le=1000)]
Burst = Annotated[int, Field(ge=1, le=1000)]
Concurrency = Annotated[int, Field(ge=1, le=256)]


class SourceSettings(Section):
    """One domain API. Each source's class below gives `base_url`, `rate_per_s`, `burst` and `concurrency` the
    API's real endpoint and documented limits."""

    enabled: bool = True
    base_url: str
    rate_per_s: RatePerS
    burst: Burst = 1
    concurrency: Concurrency = 2
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    default_api_key: str | None = None  # a documented public key (TheSportsDB's "123"), not a secret
    user_agent: str | None = None
    timeout_s: float = Field(default=20.0, gt=0, le=600)
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)  # larger: a skipped record
    poll_interval_s: float = Field(default=900.0, gt=0, le=7 * 86400)
    lookback_days: int = Field(default=14, ge=1, le=3650)  # first window when no cursor exists
    overlap_hours: float = Field(default=24.0, ge=0, le=24 * 366)  # re-read this much before the watermark
    breaker_failures: int = Field(default=5, ge=1, le=1000)
    breaker_reset_s: float = Field(default=300.0, gt=0, le=86400)
    options: SourceOptions = Field(default_factory=SourceOptions)  # each source's own, typed


# --- the sources: real endpoints with their documented limits ----------------------------------

class TmdbSettings(SourceSettings):
    """TMDB (movies): a key is required (free, non-commercial; attribution required)."""

    base_url: str = "https://api.themoviedb.org/3"
    rate_per_s: RatePerS = 20.0
    burst: Burst = 20
    concurrency: Concurrency = 8
    api_key_env: str | None = "TMDB_API_KEY"
    options: TmdbOptions = Field(default_factory=TmdbOptions)


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


class TheSportsDbSettings(SourceSettings):
    """TheSportsDB (sports): the free key "123" (30 requests/min), a premium key from the environment."""

    base_url: str = "https://www.thesportsdb.com/api/v1/json"
    rate_per_s: RatePerS = 0.5
    burst: Burst = 1
    concurrency: Concurrency = 1
    api_key_env: str | None = "THESPORTSDB_API_KEY"
    default_api_key: str | None = "123"
    options: TheSportsDbOptions = Field(default_factory=TheSportsDbOptions)


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


class ArxivSettings(SourceSettings):
    """arXiv API (science, Atom XML): no key; one request every 3 s on a single connection (the API's terms);
    metadata under CC0 1.0."""

    base_url: str = "https://export.arxiv.org/api"
    rate_per_s: RatePerS = 1 / 3
    burst: Burst = 1
    concurrency: Concurrency = 1
    user_agent: str | None = "clkt/0.1 (+https://github.com/clkt; mailto:clkt@example.org)"
    poll_interval_s: float = Field(default=3600.0, gt=0, le=7 * 86400)
    lookback_days: int = Field(default=3, ge=1, le=3650)
    # a paper is listed once announced (the next weekday evening, ET): a Friday's submission appears on Monday,
    # so each window re-reads four days before the watermark
    overlap_hours: float = Field(default=96.0, ge=0, le=24 * 366)
    options: ArxivOptions = Field(default_factory=ArxivOptions)


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


class SourcesSettings(Section):
    """`[sources.<name>]`: one field per source, each with its real defaults."""

    tmdb: TmdbSettings = Field(default_factory=TmdbSettings)
    musicbrainz: MusicBrainzSettings = Field(default_factory=MusicBrainzSettings)
    deezer: DeezerSettings = Field(default_factory=DeezerSettings)
    thesportsdb: TheSportsDbSettings = Field(default_factory=TheSportsDbSettings)
    usgs: UsgsSettings = Field(default_factory=UsgsSettings)
    gdacs: GdacsSettings = Field(default_factory=GdacsSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    launchlibrary: LaunchLibrarySettings = Field(default_factory=LaunchLibrarySettings)

    @classmethod
    def names(cls) -> list[str]:
        """Every source's name (the `[sources.<name>]` tables), sorted."""
        return sorted(cls.model_fields)

    def items(self) -> list[tuple[str, SourceSettings]]:
        """(name, settings) of every source, in declaration order."""
        return [(name, self[name]) for name in type(self).model_fields]

    def __getitem__(self, name: str) -> SourceSettings:
        if name not in type(self).model_fields:
            raise KeyError(f"unknown source {name!r}; known: {self.names()}")
        value = getattr(self, name)
        assert isinstance(value, SourceSettings)
        return value
