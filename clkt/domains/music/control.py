"""Fictional releases: an invented artist, title and label, a track list of invented titles."""

from __future__ import annotations

import random
from datetime import date

from clkt.domains.music.facts import ReleaseFacts, Track
from clkt.snapshots.fiction._namer import WORDS, Namer, day_in
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind, Made

__all__: list[str] = []

_LABEL_SUFFIX = ("Records", "Music", "Recordings", "Sound")


def _release(rng: random.Random, nm: Namer, start: date, end: date) -> Made[ReleaseFacts]:
    artist = nm.person()
    titles: list[str] = []
    while len(titles) < rng.randint(6, 12):
        t = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
        if t not in titles and t.split()[0] != t.split()[1]:
            titles.append(t)
    facts = ReleaseFacts(
        title=nm.title(), artists=[artist], artist_credit=artist, release_date=day_in(rng, start, end),
        label=nm.suffixed(_LABEL_SUFFIX, place=False), release_type=rng.choice(("Album", "EP")),
        tracks=[Track(position=i + 1, title=t, length_s=rng.randint(140, 330)) for i, t in enumerate(titles)],
    )
    pools = {"artist": nm.pool(nm.person), "label": nm.pool(lambda: nm.suffixed(_LABEL_SUFFIX, place=False))}
    return facts.title, facts, pools


FICTIONAL_KINDS.register(FictionalKind(kind="release", make=_release))
