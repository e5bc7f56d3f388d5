"""TheSportsDB v1 (sports): events by day for each configured league, then the event lookup.

The key is a path segment (`/{key}/eventsday.php`); the free public key `123` is the default. Every
number arrives as a string. Eligibility: a finished match (not postponed, a final status) with a final
score. Baseball box scores in `strResult` become per-inning period scores.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import ClassVar

from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord, MatchFacts, PeriodScore
from clkt.sources._parse import arr, aware, guard, obj, opt_int, opt_str, req_date, req_str
from clkt.sources.base import PollPage, Source, SourceRef, Window

__all__ = ["TheSportsDbSource", "parse_event", "parse_events", "FINISHED", "NOT_FINISHED"]

FINISHED = {"FT", "AET", "PEN", "AOT", "AP", "Match Finished", "Finished", "FT_PEN", "After Over Time"}
NOT_FINISHED = {"NS", "Not Started", "TBD", "PST", "Postponed", "CANC", "Cancelled", "ABD", "Abandoned", "SUSP",
                "INT", "1H", "2H", "HT", "ET", "BT", "P", "LIVE", "Q1", "Q2", "Q3", "Q4", "OT", "IN1", "IN2"}
_INNINGS = re.compile(r"Innings:\s*<br>\s*([\d\sX-]+?)\s*<br>", re.I)


def _periods(result: str | None) -> list[PeriodScore]:
    if not result:
        return []
    rows = _INNINGS.findall(result)
    if len(rows) != 2:
        return []
    home, away = (r.split() for r in rows)
    if len(home) != len(away) or not home:
        return []
    out = []
    for i, (h, a) in enumerate(zip(home, away, strict=True), start=1):
        if not (h.isdigit() and a.isdigit()):
            continue
        out.append(PeriodScore(label=str(i), home=int(h), away=int(a)))
    return out


@guard
def parse_events(payload: object) -> list[SourceRef]:
    p = obj(payload, "events envelope")
    refs = []
    for e in arr(p, "events"):
        e = obj(e, "event")
        refs.append(SourceRef(external_id=req_str(e, "idEvent"), name=opt_str(e, "strEvent") or ""))
    return refs


@guard
def parse_event(payload: object) -> EntityRecord:
    p = obj(payload, "lookup envelope")
    events = arr(p, "events")
    if not events:
        raise PayloadError("not_found", "no event in the lookup")
    e = obj(events[0], "event")
    event_id = req_str(e, "idEvent")
    if (opt_str(e, "strPostponed") or "no").lower() == "yes":
        raise PayloadError("postponed", event_id)
    status = opt_str(e, "strStatus")
    if status in NOT_FINISHED or (status is not None and status not in FINISHED):
        raise PayloadError("not_finished", f"{event_id}: status {status!r}")
    home_score, away_score = opt_int(e, "intHomeScore"), opt_int(e, "intAwayScore")
    if home_score is None or away_score is None:
        raise PayloadError("no_score", event_id)
    day = req_date(e, "dateEvent")
    kickoff: datetime | None = None
    ts = opt_str(e, "strTimestamp")
    if ts:
        try:
            kickoff = aware(datetime.fromisoformat(ts.replace("Z", "+00:00"))).astimezone(timezone.utc)
        except ValueError:
            raise PayloadError("bad_date", f"strTimestamp={ts[:40]!r}") from None
    home, away = req_str(e, "strHomeTeam"), req_str(e, "strAwayTeam")
    spectators = opt_int(e, "intSpectators")
    rnd = opt_str(e, "intRound")
    facts = MatchFacts(
        sport=req_str(e, "strSport"), competition=req_str(e, "strLeague"), season=opt_str(e, "strSeason"),
        round=rnd if rnd not in (None, "0") else None, date=day, kickoff_utc=kickoff, venue=opt_str(e, "strVenue"),
        city=opt_str(e, "strCity"), country=opt_str(e, "strCountry"), home_team=home, away_team=away,
        home_score=home_score, away_score=away_score, periods=_periods(opt_str(e, "strResult")),
        spectators=spectators if spectators and spectators > 0 else None, status=status or "FT",
    )
    return EntityRecord(
        source="thesportsdb", external_id=event_id, domain=Domain.sports, name=f"{home} vs {away} ({day.isoformat()})",
        occurred_at=kickoff or aware(day), payload=dict(e), facts=facts,
    )


class TheSportsDbSource(Source):
    name: ClassVar[str] = "thesportsdb"
    domain: ClassVar[Domain] = Domain.sports

    def _key(self) -> str:
        return self.client.api_key or self.settings.default_api_key or "123"

    def _slots(self, window: Window) -> list[tuple[date, str]]:
        leagues = [str(x) for x in self.option("leagues", ["4328"])]
        first = window.start.date()
        last = (window.end - timedelta(microseconds=1)).date()
        days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
        return [(d, lg) for d in days for lg in leagues]

    async def poll(self, window: Window, page: int) -> PollPage:
        slots = self._slots(window)
        if not slots or page > len(slots):
            return PollPage(refs=[], next_page=None)
        day, league = slots[page - 1]
        got = await self.client.get_json(f"{self._key()}/eventsday.php", params={"d": day.isoformat(), "l": league},
                                         cache=True)
        refs = [] if got.data is None else parse_events(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in refs]
        return PollPage(refs=refs, next_page=page + 1 if page < len(slots) else None, not_modified=got.not_modified)

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        got = await self.client.get_json(f"{self._key()}/lookupevent.php", params={"id": ref.external_id})
        if got.data is None:
            raise PayloadError("not_found", f"event {ref.external_id}: HTTP {got.status}")
        rec = parse_event(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})
