"""TheSportsDB v1 (sports): events by day for each configured league, then the event lookup.

The key is a path segment (`/{key}/eventsday.php`); the free public key `123` is the default. Every
number arrives as a string. Eligibility: a finished match (not postponed, a final status) with a final
score. Baseball box scores in `strResult` become per-inning period scores.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import ClassVar

from clkt.domains.sports.facts import MatchFacts, PeriodScore
from clkt.domains.sports.settings import TheSportsDbSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import (
    Items,
    arr,
    aware,
    bounded,
    each,
    guard,
    obj,
    opt_int,
    opt_str,
    plausible_year,
    req_date,
    req_str,
)
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["FINISHED", "NOT_FINISHED", "TheSportsDbSource", "parse_event", "parse_events"]

FINISHED = {"FT", "AET", "PEN", "AOT", "AP", "Match Finished", "Finished", "FT_PEN", "After Over Time"}
NOT_FINISHED = {"NS", "Not Started", "TBD", "PST", "Postponed", "CANC", "Cancelled", "ABD", "Abandoned", "SUSP",
                "INT", "1H", "2H", "HT", "ET", "BT", "P", "LIVE", "Q1", "Q2", "Q3", "Q4", "OT", "IN1", "IN2"}
# linear time: `[^<]*` cannot run past the closing `<br>`, and nothing else in the pattern overlaps it
_INNINGS = re.compile(r"Innings:[ \t\r\n]*<br>([^<]*)<br>", re.I)
_INNINGS_ROW = re.compile(r"[\d\sX-]+")
MAX_SCORE = 1000  # no match of any sport in the API ends above this


def _periods(result: str | None) -> list[PeriodScore]:
    if not result:
        return []
    rows = [r.strip() for r in _INNINGS.findall(result)]
    if len(rows) != 2 or not all(_INNINGS_ROW.fullmatch(r) for r in rows):
        return []
    home, away = (r.split() for r in rows)
    if len(home) != len(away) or not home:
        return []
    out = []
    for i, (h, a) in enumerate(zip(home, away, strict=True), start=1):
        if not (h.isdigit() and a.isdigit()) or max(len(h), len(a)) > 3:
            continue
        out.append(PeriodScore(label=str(i), home=int(h), away=int(a)))
    return out


@guard
def parse_events(payload: object) -> Items[SourceRef]:
    p = obj(payload, "events envelope")

    def one(x: object) -> SourceRef:
        e = obj(x, "event")
        return SourceRef(external_id=req_str(e, "idEvent"), name=opt_str(e, "strEvent") or "")

    return each(arr(p, "events"), "event", one)


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
    home_score = bounded(opt_int(e, "intHomeScore"), "intHomeScore", 0, MAX_SCORE)
    away_score = bounded(opt_int(e, "intAwayScore"), "intAwayScore", 0, MAX_SCORE)
    if home_score is None or away_score is None:
        raise PayloadError("no_score", event_id)
    day = req_date(e, "dateEvent")
    kickoff: datetime | None = None
    ts = opt_str(e, "strTimestamp")
    if ts:
        try:
            kickoff = plausible_year(aware(datetime.fromisoformat(ts.replace("Z", "+00:00"))).astimezone(UTC),
                                     "strTimestamp")
        except ValueError:
            raise PayloadError("bad_date", f"strTimestamp={ts[:40]!r}") from None
    home, away = req_str(e, "strHomeTeam"), req_str(e, "strAwayTeam")
    spectators = bounded(opt_int(e, "intSpectators"), "intSpectators", -1, 1_000_000)
    rnd = opt_str(e, "intRound")
    facts = MatchFacts(
        sport=req_str(e, "strSport"), competition=req_str(e, "strLeague"), season=opt_str(e, "strSeason"),
        round=rnd if rnd not in (None, "0") else None, date=day, kickoff_utc=kickoff, venue=opt_str(e, "strVenue"),
        city=opt_str(e, "strCity"), country=opt_str(e, "strCountry"), home_team=home, away_team=away,
        home_score=home_score, away_score=away_score, periods=_periods(opt_str(e, "strResult")),
        spectators=spectators if spectators and spectators > 0 else None, status=status or "FT",
    )
    return EntityRecord(
        source=TheSportsDbSource.name, external_id=event_id, domain=Domain.sports, name=f"{home} vs {away} ({day.isoformat()})",
        occurred_at=kickoff or aware(day), payload=dict(e), facts=facts,
    )


class TheSportsDbSource(Source[TheSportsDbSettings]):
    name: ClassVar[str] = "thesportsdb"
    domain: ClassVar[Domain] = Domain.sports
    kind: ClassVar[str] = "match"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="TheSportsDB, https://www.thesportsdb.com",
        terms=(
            "Data from TheSportsDB, subject to its terms of use (crowd-sourced data; attribution requested; "
            "free API tier for non-commercial use)."
        ),
    )

    def _key(self) -> str:
        return self.client.api_key or self.settings.default_api_key or "123"

    def _slots(self, window: Window) -> list[tuple[date, str]]:
        leagues = [str(x) for x in self.settings.options.leagues]
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
        parsed: Items[SourceRef] = Items() if got.data is None else parse_events(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        return PollPage(refs=refs, next_page=page + 1 if page < len(slots) else None, not_modified=got.not_modified,
                        skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        got = await self.client.get_json(f"{self._key()}/lookupevent.php", params={"id": ref.external_id})
        if got.data is None:
            raise PayloadError("not_found", f"event {ref.external_id}: HTTP {got.status}")
        rec = parse_event(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})


SOURCE = TheSportsDbSource
