"""Typed structured facts of an entity, per domain: the contract between the crawlers (which fill them
from the API payload), the document renderer and the question generators (which read them).

Every fact model is a pydantic model with a `kind` discriminator; `EntityFacts` is their union.
`RenderedDocument.sentences` maps a fact slot to the sentence of the document that states it (always a
substring of `text`), so a generator can quote evidence verbatim.

What each kind means to the rest of the product is registered by the kind's own modules, keyed by its `kind`:
its renderer and slots (`clkt.documents.registry.DocumentKind`), its templates, proper names and judge facts
(`agents.template.domains.AgentKind`), its control split's maker (`clkt.snapshots.fiction.FictionalKind`).
"""

from __future__ import annotations

from datetime import date, datetime
from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SLOTS",
    "CastMember",
    "DisasterFacts",
    "Domain",
    "EntityFacts",
    "EntityRecord",
    "FilmFacts",
    "LaunchFacts",
    "MatchFacts",
    "PaperFacts",
    "PeriodScore",
    "QuakeFacts",
    "ReleaseFacts",
    "RenderedDocument",
    "Track",
]


class Domain(str, Enum):
    movies = "movies"
    music = "music"
    sports = "sports"
    disasters = "disasters"
    science = "science"
    spaceflight = "spaceflight"


class _Facts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PeriodScore(_Facts):
    label: str  # "1", "2", "Q1", "1st half", an inning number...
    home: int
    away: int


class MatchFacts(_Facts):
    kind: Literal["match"] = "match"
    sport: str
    competition: str
    season: str | None = None
    round: str | None = None
    date: date
    kickoff_utc: datetime | None = None
    venue: str | None = None
    city: str | None = None
    country: str | None = None
    home_team: str
    away_team: str
    home_score: int
    away_score: int
    periods: list[PeriodScore] = Field(default_factory=list)
    spectators: int | None = None
    status: str = "FT"


class CastMember(_Facts):
    name: str
    character: str | None = None


class FilmFacts(_Facts):
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


class Track(_Facts):
    position: int
    title: str
    length_s: int | None = None


class ReleaseFacts(_Facts):
    kind: Literal["release"] = "release"
    title: str
    artists: list[str]
    artist_credit: str  # as credited, with join phrases ("A feat. B")
    release_date: date
    label: str | None = None
    catalog_number: str | None = None
    country: str | None = None
    release_type: str | None = None  # Album, Single, EP...
    tracks: list[Track] = Field(default_factory=list)
    genres: list[str] = Field(default_factory=list)
    barcode: str | None = None


class QuakeFacts(_Facts):
    kind: Literal["quake"] = "quake"
    title: str
    place: str
    time_utc: datetime
    magnitude: float
    mag_type: str | None = None
    depth_km: float
    latitude: float
    longitude: float
    alert: str | None = None  # PAGER green / yellow / orange / red
    tsunami: bool = False
    felt: int | None = None  # number of felt reports
    mmi: float | None = None
    cdi: float | None = None
    significance: int | None = None
    fatalities: int | None = None
    economic_loss_usd: int | None = None


class DisasterFacts(_Facts):
    """A non-seismic disaster (ReliefWeb / GDACS): flood, storm, drought..."""

    kind: Literal["disaster"] = "disaster"
    name: str
    disaster_type: str
    country: str
    countries: list[str] = Field(default_factory=list)
    date: date
    status: str | None = None
    glide: str | None = None
    alert: str | None = None
    deaths: int | None = None
    affected: int | None = None
    summary: str | None = None


class PaperFacts(_Facts):
    """A new arXiv paper (science): its first version's metadata, as the arXiv API lists it."""

    kind: Literal["paper"] = "paper"
    arxiv_id: str  # without its version ("2511.18882")
    title: str  # plain text: markup stripped, whitespace folded
    authors: list[str] = Field(min_length=1)  # in the paper's order
    primary_category: str  # "cs.CV"
    categories: list[str] = Field(default_factory=list)  # the primary first, then the cross-lists
    submitted: datetime  # aware UTC: the first version's submission
    version: int = 1
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    summary: str | None = None  # the abstract, whitespace folded (TeX kept as written)


class LaunchFacts(_Facts):
    """An orbital launch attempt with a final outcome (spaceflight), as Launch Library 2 lists it."""

    kind: Literal["launch"] = "launch"
    name: str  # "Falcon 9 Block 5 | Starlink Group 10-40"
    net: datetime  # aware UTC: the launch time
    outcome: Literal["success", "failure", "partial failure"]
    provider: str | None = None
    rocket: str | None = None  # the configuration's full name
    mission: str | None = None
    mission_type: str | None = None
    orbit: str | None = None
    pad: str | None = None
    location: str | None = None
    country_code: str | None = None
    failreason: str | None = None


EntityFacts = Annotated[
    MatchFacts | FilmFacts | ReleaseFacts | QuakeFacts | DisasterFacts | PaperFacts | LaunchFacts,
    Field(discriminator="kind"),
]


class EntityRecord(BaseModel):
    """What a source yields for one entity: identity, time, the raw payload and its typed facts."""

    model_config = ConfigDict(frozen=True)

    source: str
    external_id: str
    domain: Domain
    name: str
    occurred_at: datetime  # aware UTC
    payload: dict[str, object]  # the raw API payload(s), kept verbatim for provenance
    facts: EntityFacts
    redated_from: datetime | None = None  # the replay server re-dated this record; its recorded time


class RenderedDocument(BaseModel):
    model_config = ConfigDict(frozen=True)

    lang: str
    text: str
    sentences: dict[str, str] = Field(default_factory=dict)  # fact slot -> sentence (substring of text)


# The fact slots a document states (one sentence each, when the fact is known) and questions ask about.
SLOTS: dict[str, tuple[str, ...]] = {
    "match": ("date", "competition", "venue", "home_team", "away_team", "final_score", "winner", "spectators"),
    "film": ("release_date", "director", "lead_actor", "runtime", "genre", "budget", "revenue", "production_company"),
    "release": ("artist", "release_date", "label", "track_count", "first_track", "last_track", "release_type"),
    "quake": (
        "time", "place", "magnitude", "depth", "alert", "tsunami", "felt", "fatalities", "intensity", "latitude",
    ),
    "disaster": ("date", "disaster_type", "country", "status", "deaths", "affected", "glide"),
    "paper": ("submitted", "first_author", "last_author", "author_count", "primary_category", "category_count"),
    "launch": ("net", "provider", "rocket", "outcome", "mission_type", "orbit", "pad", "location"),
}
