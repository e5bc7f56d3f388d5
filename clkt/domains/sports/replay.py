"""TheSportsDB as the replay server serves it, both modes: a day's events (`eventsday.php?d=&l=&s=`) and one event
(`lookupevent.php?id=`); the recorded responses (`data/thesportsdb/`, where the parsers' tests read
them too) and the generated ones: soccer matches of fictional competitions in the three default league ids, taking
turns."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from clkt import clock
from clkt.domains.sports import SPEC
from clkt.domains.sports.facts import MatchFacts
from clkt.replay.catalog import _day, json_recorded
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.generator import _midnight
from clkt.replay.query import parse_day

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes
    from clkt.replay.stream import Generated

__all__ = ["LEAGUES", "REPLAY", "event"]

_json = partial(json_recorded, __name__.rpartition(".")[0])  # this folder's recordings: `data/<source>/<file>`

LEAGUES = ("4328", "4424", "4387")  # the league ids the poller asks for by default; generated matches take turns
_EVENTS_DAY, _LOOKUP = "/thesportsdb/{key}/eventsday.php", "/thesportsdb/{key}/lookupevent.php"
_NUMERIC_BASE = 9  # the leading digit of a generated event id
_INDEX_DIGITS = 9


def _time(ev: dict[str, Any]) -> datetime:
    ts = ev.get("strTimestamp")
    if ts:
        return datetime.fromisoformat(ts.replace("Z", "")).replace(tzinfo=UTC)
    return _day(ev["dateEvent"])


def _items() -> list[Item]:
    items: list[Item] = []
    for f in ("thesportsdb/eventsday-2023-11-01-l4424.json", "thesportsdb/lookupevent-441613.json"):
        for ev in _json(f)["events"]:
            items.append(Item(id=ev["idEvent"], occurred=_time(ev), listing=ev, detail=ev))
    return items


def _wanted(ev: dict[str, Any], request: web.Request) -> bool:
    """Whether event `ev` is of the league (`l`: id or name) and sport (`s`) the request asks for, if any."""
    league, sport = request.query.get("l"), request.query.get("s")
    return (not league or league in (ev.get("idLeague"), ev.get("strLeague"))) and (not sport or sport == ev.get("strSport"))


async def _recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    if request.path.endswith("/lookupevent.php"):
        s = routes._find(SPEC.source, request.query.get("id", ""))
        if s is None:
            return routes._json(request, {"events": None}, [])
        return routes._json(request, {"events": [s.detail]}, [s])
    d = parse_day(request.query.get("d"))
    if d is None:
        return routes._json(request, {"events": None}, [])
    items = [s for s in routes.served[SPEC.source] if s.listing.get("dateEvent") == d.isoformat() and _wanted(s.listing, request)]
    return routes._json(request, {"events": [s.listing for s in items] or None}, items, conditional=True)


def event(g: Generated, *, league: str) -> dict[str, Any]:
    """A generated match as TheSportsDB answers it (every number a string)."""
    f = g.facts_as(MatchFacts)
    kickoff = f.kickoff_utc or datetime.combine(f.date, datetime.min.time(), tzinfo=UTC)
    return {
        "idEvent": g.external_id, "strEvent": f"{f.home_team} vs {f.away_team}", "strSport": "Soccer",
        "idLeague": league, "strLeague": f.competition, "strSeason": f.season, "intRound": "0",
        "dateEvent": f.date.isoformat(), "strTime": kickoff.strftime("%H:%M:%S"),
        "strTimestamp": kickoff.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        "strHomeTeam": f.home_team, "strAwayTeam": f.away_team, "intHomeScore": str(f.home_score),
        "intAwayScore": str(f.away_score), "strStatus": "Match Finished", "strPostponed": "no",
        "strVenue": f.venue, "strCity": f.city, "strCountry": f.country,
        "intSpectators": str(f.spectators) if f.spectators else None, "strResult": "",
    }


async def _generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    if request.path.endswith("/lookupevent.php"):
        g = gen._find(SPEC.source, request.query.get("id", ""))
        if g is None:
            return gen._json(request, {"events": None})
        return gen._json(request, {"events": [event(g, league=LEAGUES[g.index % len(LEAGUES)])]})
    d = parse_day(request.query.get("d"))
    if d is None:
        return gen._json(request, {"events": None})
    indices = gen.stream.occurred_between(SPEC.source, _midnight(d), _midnight(d) + timedelta(days=1), now=clock.now())
    events = [event(gen.stream.entity(SPEC.source, i), league=LEAGUES[i % len(LEAGUES)]) for i in indices]
    return gen._json(request, {"events": [ev for ev in events if _wanted(ev, request)] or None}, conditional=True)


REPLAY = DomainReplay(
    source=SPEC.source, paths=(_EVENTS_DAY, _LOOKUP), items=_items, recorded=_recorded, generated=_generated,
    lag_s=(2 * 3600, 3 * 3600), external_id=lambda tag, i: str((_NUMERIC_BASE * 1000 + tag) * 10**_INDEX_DIGITS + i),
    id_pattern=re.compile(rf"^{_NUMERIC_BASE}(?P<tag>\d{{3}})(?P<i>\d{{{_INDEX_DIGITS}}})$"),
)
