"""The crawlers: one module per domain API, the shared HTTP layer, and the poller service."""

from __future__ import annotations

from typing import Any

from clkt.sources.base import PollPage, Source, SourceRef, Window
from clkt.sources.deezer import DeezerSource
from clkt.sources.gdacs import GdacsSource
from clkt.sources.http import Fetched, SourceClient
from clkt.sources.musicbrainz import MusicBrainzSource
from clkt.sources.thesportsdb import TheSportsDbSource
from clkt.sources.tmdb import TmdbSource
from clkt.sources.usgs import UsgsSource

__all__ = [
    "SOURCE_TYPES",
    "Fetched",
    "PollPage",
    "Source",
    "SourceClient",
    "SourceRef",
    "Window",
]

# source name (a field of `clkt.config.SourcesSettings`) -> implementation
SOURCE_TYPES: dict[str, type[Source[Any]]] = {
    cls.name: cls
    for cls in (TmdbSource, MusicBrainzSource, DeezerSource, TheSportsDbSource, UsgsSource, GdacsSource)
}
