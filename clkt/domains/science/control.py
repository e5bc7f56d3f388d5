"""Fictional papers: an invented title, invented authors, a real arXiv category (categories are a vocabulary)."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time

from clkt.domains.science.facts import PaperFacts
from clkt.domains.science.templates import CATEGORIES
from clkt.snapshots.fiction._namer import Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__: list[str] = []

_TOPICS = ("Sparse", "Adaptive", "Robust", "Spectral", "Hierarchical", "Stochastic", "Quantum", "Latent")
_OBJECTS = ("Transport", "Lattices", "Embeddings", "Resonances", "Operators", "Flows", "Manifolds", "Kernels")


def _paper(rng: random.Random, nm: Namer, start: date, end: date) -> Made[PaperFacts]:
    authors = [nm.person() for _ in range(rng.randint(2, 6))]
    categories = rng.sample(CATEGORIES, rng.randint(1, 3))
    day = day_in(rng, start, end)
    title = f"{rng.choice(_TOPICS)} {rng.choice(_OBJECTS)} in {nm.place()} Models"
    facts = PaperFacts(
        arxiv_id=f"{day.year % 100:02d}{day.month:02d}.{rng.randint(10000, 99999)}", title=title, authors=authors,
        primary_category=categories[0], categories=categories,
        submitted=datetime.combine(day, time(rng.randrange(24), rng.randrange(60)), tzinfo=UTC),
    )
    people = nm.pool(nm.person)
    return title, facts, {"first_author": people, "last_author": people}


FICTIONAL_KINDS.register(FictionalKind(kind="paper", make=_paper))
