"""music: releases from MusicBrainz (1 request a second, a User-Agent with a contact; CC0 core data) and Deezer
(no key; its API terms)."""

from __future__ import annotations

from clkt.domains.music.facts import ReleaseFacts, Track
from clkt.domains.music.settings import DeezerOptions, DeezerSettings, MusicBrainzOptions, MusicBrainzSettings
from clkt.domains.spec import DomainSpec

__all__ = ["SPEC", "DeezerOptions", "DeezerSettings", "MusicBrainzOptions", "MusicBrainzSettings", "ReleaseFacts",
           "Track"]

SPEC = DomainSpec(
    name="music", package=__name__, facts=ReleaseFacts, source="musicbrainz", settings=MusicBrainzSettings,
    more_sources=(("deezer", DeezerSettings),), quota=30,
    slots=("artist", "release_date", "label", "track_count", "first_track", "last_track", "release_type"),
)
