"""MusicBrainz's poller lives in its domain's folder (`clkt.domains.music.source`); this name stays for its
importers."""

from __future__ import annotations

from clkt.domains.music.source import MusicBrainzSource, parse_release, parse_release_search

__all__ = ["MusicBrainzSource", "parse_release", "parse_release_search"]
