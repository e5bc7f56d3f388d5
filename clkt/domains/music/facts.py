"""The typed facts of a music entity: a release (MusicBrainz, Deezer)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from clkt.domain_base import Facts, FactsModel

__all__ = ["ReleaseFacts", "Track"]


class Track(FactsModel):
    position: int
    title: str
    length_s: int | None = None


class ReleaseFacts(Facts):
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
