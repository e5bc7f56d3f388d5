"""TMDB's poller lives in its domain's folder (`clkt.domains.movies.source`); this name stays for its importers."""

from __future__ import annotations

from clkt.domains.movies.source import TmdbSource, parse_discover, parse_movie

__all__ = ["TmdbSource", "parse_discover", "parse_movie"]
