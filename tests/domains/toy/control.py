from __future__ import annotations

import random
from datetime import date, timedelta

from clkt.snapshots.fiction import Made, Namer
from clkt.snapshots.fiction.kinds import FICTIONAL_KINDS, FictionalKind
from tests.domains.toy.facts import LighthouseFacts


def make(rng: random.Random, nm: Namer, start: date, end: date) -> Made[LighthouseFacts]:
    facts = LighthouseFacts(name=f"{nm.place()} Light", lit=start + timedelta(days=rng.randrange(max((end - start).days, 1))),
                            height_m=rng.randint(8, 70), keeper=nm.person())
    return facts.name, facts, {"keeper": nm.pool(nm.person)}


FICTIONAL_KINDS.register(FictionalKind(kind="lighthouse", make=make))
