"""Fictional films: invented titles, people and studios, plausible runtimes and box office."""

from __future__ import annotations

import random
from datetime import date

from clkt.documents.labels import known_values
from clkt.domains.movies.facts import CastMember, FilmFacts
from clkt.domains.movies.labels import GENRE
from clkt.snapshots.fiction._namer import Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__: list[str] = []

_STUDIO_SUFFIX = ("Pictures", "Films", "Studios", "Entertainment")


def _film(rng: random.Random, nm: Namer, start: date, end: date) -> Made[FilmFacts]:
    title = nm.title()
    budget = rng.randint(2, 90) * 1_000_000
    facts = FilmFacts(
        title=title, release_date=day_in(rng, start, end), directors=[nm.person()],
        cast=[CastMember(name=nm.person()) for _ in range(3)], runtime_min=rng.randint(84, 151),
        genres=rng.sample(known_values(GENRE), 2), budget_usd=budget,
        revenue_usd=int(budget * rng.uniform(0.3, 4.0)) // 100_000 * 100_000 or 100_000,
        production_companies=[nm.suffixed(_STUDIO_SUFFIX, place=False)],
    )
    people = nm.pool(nm.person)
    pools = {"director": people, "lead_actor": people, "production_company": nm.pool(lambda: nm.suffixed(_STUDIO_SUFFIX, place=False))}
    return title, facts, pools


FICTIONAL_KINDS.register(FictionalKind(kind="film", make=_film))
