"""movies: released films from TMDB (a key required; non-commercial use with attribution)."""

from __future__ import annotations

from clkt.domains.movies.facts import CastMember, FilmFacts
from clkt.domains.movies.settings import TmdbOptions, TmdbSettings
from clkt.domains.spec import DomainSpec

__all__ = ["SPEC", "CastMember", "FilmFacts", "TmdbOptions", "TmdbSettings"]

SPEC = DomainSpec(
    name="movies", package=__name__, facts=FilmFacts, source="tmdb", settings=TmdbSettings, quota=30,
    slots=("release_date", "director", "lead_actor", "runtime", "genre", "budget", "revenue", "production_company"),
)
