"""The typed facts of a movies entity: a released film (TMDB)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from clkt.domain_base import Facts, FactsModel

__all__ = ["CastMember", "FilmFacts"]


class CastMember(FactsModel):
    name: str
    character: str | None = None


class FilmFacts(Facts):
    kind: Literal["film"] = "film"
    title: str
    original_title: str | None = None
    release_date: date
    directors: list[str] = Field(default_factory=list)
    cast: list[CastMember] = Field(default_factory=list)  # billing order
    runtime_min: int | None = None
    genres: list[str] = Field(default_factory=list)
    overview: str | None = None
    tagline: str | None = None
    budget_usd: int | None = None
    revenue_usd: int | None = None
    production_companies: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)
    original_language: str | None = None
