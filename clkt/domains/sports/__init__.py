"""sports: finished matches from TheSportsDB (the free key "123", 30 requests a minute; attribution requested)."""

from __future__ import annotations

from clkt.domains.spec import DomainSpec
from clkt.domains.sports.facts import MatchFacts, PeriodScore
from clkt.domains.sports.settings import TheSportsDbOptions, TheSportsDbSettings

__all__ = ["SPEC", "MatchFacts", "PeriodScore", "TheSportsDbOptions", "TheSportsDbSettings"]

SPEC = DomainSpec(
    name="sports", package=__name__, facts=MatchFacts, source="thesportsdb", settings=TheSportsDbSettings, quota=20,
    slots=("date", "competition", "venue", "home_team", "away_team", "final_score", "winner", "spectators"),
)
