"""Fictional matches: invented teams, venues and leagues, a score with a winner."""

from __future__ import annotations

import random
from datetime import date, datetime

from agents.template.values import NameValue
from clkt.domains.sports.facts import MatchFacts
from clkt.snapshots.fiction._namer import Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__: list[str] = []

_TEAM_SUFFIX = ("Rovers", "Athletic", "United", "Wanderers", "Rangers", "Albion", "Harriers", "Olympic")
_VENUE_SUFFIX = ("Arena", "Park", "Stadium", "Ground", "Field")
_LEAGUE_SUFFIX = ("Premier League", "Cup", "Championship", "Super League", "First Division")


def _match(rng: random.Random, nm: Namer, start: date, end: date) -> Made[MatchFacts]:
    home, away = nm.suffixed(_TEAM_SUFFIX), nm.suffixed(_TEAM_SUFFIX)
    hs, as_ = rng.randint(0, 4), rng.randint(0, 4)
    if hs == as_:
        hs += 1  # a winner to ask about
    facts = MatchFacts(
        sport="soccer", competition=nm.suffixed(_LEAGUE_SUFFIX, place=False), season=str(start.year),
        date=day_in(rng, start, end), venue=nm.suffixed(_VENUE_SUFFIX), city=nm.place(), home_team=home,
        away_team=away, home_score=hs, away_score=as_, spectators=rng.randint(3_000, 60_000),
    )
    teams = nm.pool(lambda: nm.suffixed(_TEAM_SUFFIX))
    loser = away if hs > as_ else home
    pools = {
        "competition": nm.pool(lambda: nm.suffixed(_LEAGUE_SUFFIX, place=False)),
        "venue": nm.pool(lambda: nm.suffixed(_VENUE_SUFFIX)),
        "home_team": teams, "away_team": teams, "winner": (NameValue(loser), *teams),
    }
    return f"{home} – {away}", facts, pools


def _kicked_off(facts: MatchFacts, when: datetime) -> MatchFacts:
    return facts.model_copy(update={"kickoff_utc": when.replace(second=0, microsecond=0)})


FICTIONAL_KINDS.register(FictionalKind(kind="match", make=_match, timed=_kicked_off))
