"""Hypothesis strategies for the five fact kinds (shared by document and template-engine tests)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import strategies as st

from clkt.facts import (
    CastMember,
    DisasterFacts,
    FilmFacts,
    MatchFacts,
    PeriodScore,
    QuakeFacts,
    ReleaseFacts,
    Track,
)

_word = st.from_regex(r"[A-Z][a-zéüø]{2,9}", fullmatch=True)
names = st.one_of(
    st.lists(_word, min_size=1, max_size=3).map(" ".join),
    st.sampled_from(["São Paulo", "1. FC Köln", "東京ヴェルディ", "Borussia Mönchengladbach", "AC Sparta Praha"]),
)
people = st.lists(_word, min_size=2, max_size=3).map(" ".join)
dates = st.dates(min_value=date(1950, 1, 1), max_value=date(2035, 12, 31))


@st.composite
def match_facts(draw: st.DrawFn) -> MatchFacts:
    home = draw(names)
    away = draw(names.filter(lambda n: n.casefold() != home.casefold()))
    periods = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=3))
    return MatchFacts(
        sport=draw(st.sampled_from(["Soccer", "Basketball", "Ice Hockey", "Cricket"])),
        competition=draw(st.sampled_from(["English Premier League", "NBA", "Copa del Rey", "J1 League"])),
        season=draw(st.none() | st.just("2024-2025")),
        round=draw(st.none() | st.integers(1, 38).map(str)),
        date=draw(dates),
        venue=draw(st.none() | names),
        city=draw(st.none() | names),
        home_team=home,
        away_team=away,
        home_score=draw(st.integers(0, 130)),
        away_score=draw(st.integers(0, 130)),
        periods=[PeriodScore(label=f"P{i + 1}", home=h, away=a) for i, (h, a) in enumerate(periods)],
        spectators=draw(st.none() | st.integers(0, 120_000)),
    )


@st.composite
def film_facts(draw: st.DrawFn) -> FilmFacts:
    cast = draw(st.lists(people, min_size=0, max_size=6, unique_by=str.casefold))
    return FilmFacts(
        title=draw(names),
        release_date=draw(dates),
        directors=draw(st.lists(people, max_size=2, unique_by=str.casefold)),
        cast=[CastMember(name=c, character=draw(st.none() | people)) for c in cast],
        runtime_min=draw(st.none() | st.integers(1, 300)),
        genres=draw(st.lists(st.sampled_from(["Drama", "Action", "Comedy", "Science Fiction", "Horror", "Kaiju"]),
                             max_size=3, unique=True)),
        overview=draw(st.none() | st.text(min_size=1, max_size=80)),
        budget_usd=draw(st.none() | st.integers(1, 400_000_000)),
        revenue_usd=draw(st.none() | st.integers(1, 3_000_000_000)),
        production_companies=draw(st.lists(names, max_size=2, unique_by=str.casefold)),
    )


@st.composite
def release_facts(draw: st.DrawFn) -> ReleaseFacts:
    artist = draw(people)
    titles = draw(st.lists(names, min_size=0, max_size=20))
    return ReleaseFacts(
        title=draw(names),
        artists=[artist],
        artist_credit=artist,
        release_date=draw(dates),
        label=draw(st.none() | names),
        release_type=draw(st.none() | st.sampled_from(["Album", "Single", "EP", "Other"])),
        tracks=[Track(position=i, title=t, length_s=draw(st.none() | st.integers(30, 900)))
                for i, t in enumerate(titles, 1)],
    )


@st.composite
def quake_facts(draw: st.DrawFn) -> QuakeFacts:
    when = datetime.combine(draw(dates), datetime.min.time(), tzinfo=UTC) + timedelta(
        seconds=draw(st.integers(0, 86_399))
    )
    place = f"{draw(st.integers(1, 200))} km {draw(st.sampled_from(['N', 'SSE', 'WNW']))} of {draw(names)}"
    mag = round(draw(st.floats(2.0, 9.5)), 1)
    return QuakeFacts(
        title=f"M {mag} - {place}",
        place=place,
        time_utc=when,
        magnitude=mag,
        mag_type=draw(st.none() | st.sampled_from(["mw", "ml", "mb"])),
        depth_km=round(draw(st.floats(-2.0, 700.0)), 3),
        latitude=draw(st.floats(-90, 90)),
        longitude=draw(st.floats(-180, 180)),
        alert=draw(st.none() | st.sampled_from(["green", "yellow", "orange", "red"])),
        tsunami=draw(st.booleans()),
        felt=draw(st.none() | st.integers(0, 50_000)),
        fatalities=draw(st.none() | st.integers(0, 300_000)),
        # USGS estimates: 3 decimals on 0-10 (0 and 10 included: the engine asks only on 1.0-10.0 as rendered)
        mmi=draw(st.none() | st.floats(0.0, 10.0).map(lambda x: round(x, 3))),
    )


@st.composite
def disaster_facts(draw: st.DrawFn) -> DisasterFacts:
    country = draw(names)
    kind = draw(st.sampled_from(["Flood", "Drought", "Tropical Cyclone", "Epidemic", "Land Slide", "Volcano"]))
    d = draw(dates)
    return DisasterFacts(
        name=f"{country}: {kind} - {d:%b %Y}",
        disaster_type=kind,
        country=country,
        countries=[country],
        date=d,
        status=draw(st.none() | st.sampled_from(["alert", "current", "ongoing", "past"])),
        glide=draw(st.none() | st.from_regex(r"[A-Z]{2}-20[0-9]{2}-[0-9]{6}-[A-Z]{3}", fullmatch=True)),
        deaths=draw(st.none() | st.integers(0, 100_000)),
        affected=draw(st.none() | st.integers(0, 10_000_000)),
        summary=draw(st.none() | st.text(min_size=1, max_size=60)),
    )


any_facts = st.one_of(match_facts(), film_facts(), release_facts(), quake_facts(), disaster_facts())
