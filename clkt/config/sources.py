"""The domain APIs (`[sources.<name>]`): one settings class per source, with its real endpoint, its documented
limits and its typed `options`, each written here once.

`SourceSettings` is what every source has (politeness, timeouts, polling, breaker; `clkt.domain_base`); each
source's class sets its own defaults and its `options` model (`[sources.<name>.options]`). `SourcesSettings` has
one field per source, in the domains' order (`clkt.domains.domain_names`): a registered domain's from its
folder's `settings.py`, a first domain's not yet in a folder from here, so an unknown `[sources.<name>]` table is
refused by name and a `[sources.<name>]` table overrides that source's defaults key by key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from clkt.config._base import Section
from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings
from clkt.domains import DOMAINS, domain_names
from clkt.domains.movies.settings import TmdbOptions, TmdbSettings
from clkt.domains.music.settings import DeezerOptions, DeezerSettings, MusicBrainzOptions, MusicBrainzSettings
from clkt.domains.sports.settings import TheSportsDbOptions, TheSportsDbSettings

__all__ = [
    "DeezerOptions",
    "DeezerSettings",
    "FirstSources",
    "GdacsOptions",
    "GdacsSettings",
    "MusicBrainzOptions",
    "MusicBrainzSettings",
    "SourceOptions",
    "SourceSettings",
    "SourcesBase",
    "SourcesSettings",
    "TheSportsDbOptions",
    "TheSportsDbSettings",
    "TmdbOptions",
    "TmdbSettings",
    "UsgsOptions",
    "UsgsSettings",
]


# --- typed options per source (`[sources.<name>.options]`) ------------------------------------------

class UsgsOptions(SourceOptions):
    page_size: int = Field(default=200, ge=1, le=20000)
    min_magnitude: float = Field(default=5.5, ge=-2, le=10)


class GdacsOptions(SourceOptions):
    skip_types: list[str] = Field(default_factory=lambda: ["EQ"], max_length=20)  # EQ: USGS has the earthquakes




# --- the sources: real endpoints with their documented limits ----------------------------------

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


class SourcesBase(Section):
    """What `SourcesSettings` does whatever its fields: its sources by name, in order."""

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


class FirstSources(SourcesBase):
    """`[sources.<name>]` of the first domains' sources not yet in a folder, each with its real defaults
    (`SourcesSettings` has these and every registered domain's, in the domains' order)."""

    usgs: UsgsSettings = Field(default_factory=UsgsSettings)
    gdacs: GdacsSettings = Field(default_factory=GdacsSettings)


# a first domain not yet in a folder -> its sources here, in order
_FIRST_SOURCES: dict[str, tuple[str, ...]] = {
    "disasters": ("usgs", "gdacs"),
}


def _sources_model() -> type[SourcesBase]:
    """`SourcesSettings`: a field per source, in the domains' order (`domain_names`)."""
    fields: dict[str, Any] = {}
    for name in domain_names():
        spec = DOMAINS.get(name)
        for source, settings in spec.sources if spec is not None else ():
            fields[source] = (settings, Field(default_factory=settings))
        for source in _FIRST_SOURCES.get(name, ()) if spec is None else ():
            info = FirstSources.model_fields[source]
            fields[source] = (info.annotation, info)
    return create_model(
        "SourcesSettings", __base__=SourcesBase, __module__=__name__,
        __doc__="`[sources.<name>]`: one field per source, each with its real defaults.", **fields,
    )


if TYPE_CHECKING:  # typed access by name for the first sources not yet in a folder; `sources[name]` for every source
    SourcesSettings = FirstSources
else:
    SourcesSettings = _sources_model()
