"""The typed facts of a sports entity: a finished match (TheSportsDB)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import Field

from clkt.domain_base import Facts, FactsModel

__all__ = ["MatchFacts", "PeriodScore"]


class PeriodScore(FactsModel):
    label: str  # "1", "2", "Q1", "1st half", an inning number...
    home: int
    away: int


class MatchFacts(Facts):
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
