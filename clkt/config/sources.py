"""The domain APIs (`[sources.<name>]`): `SourcesSettings`, one field per source of every registered domain.

`SourceSettings` is what every source has (politeness, timeouts, polling, breaker; `clkt.domain_base`); each
source's class, in its domain's folder (`clkt.domains.<name>.settings`), sets its real endpoint, its documented
limits and its `options` model (`[sources.<name>.options]`). `SourcesSettings` loops over the registry
(`clkt.domains.DOMAINS`, each spec's `sources`), so an unknown `[sources.<name>]` table is refused by name and a
`[sources.<name>]` table overrides that source's defaults key by key. The first domains' settings classes are
re-exported here by name (`clkt.config.TmdbSettings`...), for their importers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from clkt.config._base import Section
from clkt.domain_base import SourceOptions, SourceSettings
from clkt.domains import DOMAINS
from clkt.domains.disasters.settings import GdacsOptions, GdacsSettings, UsgsOptions, UsgsSettings
from clkt.domains.movies.settings import TmdbOptions, TmdbSettings
from clkt.domains.music.settings import DeezerOptions, DeezerSettings, MusicBrainzOptions, MusicBrainzSettings
from clkt.domains.sports.settings import TheSportsDbOptions, TheSportsDbSettings

__all__ = [
    "DeezerOptions",
    "DeezerSettings",
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


def _sources_model() -> type[SourcesBase]:
    """`SourcesSettings`: a field per source of every registered domain, in the registry's order."""
    fields: dict[str, Any] = {
        source: (settings, Field(default_factory=settings)) for spec in DOMAINS.values() for source, settings in spec.sources
    }
    return create_model(
        "SourcesSettings", __base__=SourcesBase, __module__=__name__,
        __doc__="`[sources.<name>]`: one field per source, each with its real defaults.", **fields,
    )


if TYPE_CHECKING:  # `sources[name]` for every source (a domain's settings class types its own fields)
    SourcesSettings = SourcesBase
else:
    SourcesSettings = _sources_model()
