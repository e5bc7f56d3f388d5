"""Realistic fact objects modelled on the recorded fixtures (values copied from ../shared/fixtures)."""

from __future__ import annotations

from datetime import UTC, date, datetime

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

LIVERPOOL_SWANSEA = MatchFacts(
    sport="Soccer",
    competition="English Premier League",
    season="2014-2015",
    round="19",
    date=date(2014, 12, 29),
    kickoff_utc=datetime(2014, 12, 29, 20, 0, tzinfo=UTC),
    venue="Anfield",
    city="Liverpool",
    country="England",
    home_team="Liverpool",
    away_team="Swansea",
    home_score=4,
    away_score=1,
    periods=[PeriodScore(label="1st half", home=2, away=0), PeriodScore(label="2nd half", home=2, away=1)],
    spectators=44621,
)

FIGHT_CLUB = FilmFacts(
    title="Fight Club",
    release_date=date(1999, 10, 15),
    directors=["David Fincher"],
    cast=[
        CastMember(name="Edward Norton", character="Narrator"),
        CastMember(name="Brad Pitt", character="Tyler Durden"),
        CastMember(name="Helena Bonham Carter", character="Marla Singer"),
        CastMember(name="Meat Loaf", character="Robert 'Bob' Paulson"),
        CastMember(name="Jared Leto", character="Angel Face"),
    ],
    runtime_min=139,
    genres=["Drama"],
    overview=(
        "A ticking-time-bomb insomniac and a slippery soap salesman channel primal male aggression into a "
        "shocking new form of therapy."
    ),
    tagline="Mischief. Mayhem. Soap.",
    budget_usd=63000000,
    revenue_usd=100853753,
    production_companies=["Fox 2000 Pictures", "Regency Enterprises"],
)

PLUS = ReleaseFacts(
    title="+",
    artists=["Ed Sheeran"],
    artist_credit="Ed Sheeran",
    release_date=date(2011, 9, 9),
    label="Asylum Records",
    catalog_number="5052498646524",
    country="XE",
    release_type="Album",
    tracks=[
        Track(position=i, title=t)
        for i, t in enumerate(
            [
                "The A Team", "Drunk", "U.N.I.", "Grade 8", "Wake Me Up", "Small Bump", "This", "The City",
                "Lego House", "You Need Me, I Don't Need You", "Kiss Me", "Give Me Love",
            ],
            1,
        )
    ],
)

NORTHRIDGE = QuakeFacts(
    title="M 6.7 - 1km NNW of Reseda, CA",
    place="1km NNW of Reseda, CA",
    time_utc=datetime(1994, 1, 17, 12, 30, 55, 390000, tzinfo=UTC),
    magnitude=6.7,
    mag_type="mw",
    depth_km=18.202,
    latitude=34.213,
    longitude=-118.537,
    alert=None,
    tsunami=False,
    felt=10128,
    mmi=8.794,
    cdi=8.7,
    significance=1561,
)

BURKINA_FLOODS = DisasterFacts(
    name="Burkina Faso: Floods - Aug 2015",
    disaster_type="Flood",
    country="Burkina Faso",
    countries=["Burkina Faso"],
    date=date(2015, 8, 7),
    status="past",
    glide="FL-2015-000106-BFA",
    affected=24354,
    summary="On the first week of August 2015, 20,000 people were affected by heavy rains and flooding.",
)

ALL = {
    "match": LIVERPOOL_SWANSEA,
    "film": FIGHT_CLUB,
    "release": PLUS,
    "quake": NORTHRIDGE,
    "disaster": BURKINA_FLOODS,
}

ENTITY_NAMES = {
    "match": "Liverpool vs Swansea",
    "film": "Fight Club",
    "release": "+",
    "quake": "M 6.7 - 1km NNW of Reseda, CA",
    "disaster": "Burkina Faso: Floods - Aug 2015",
}
