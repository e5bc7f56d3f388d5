"""A store of probe verdicts by month for the cutoff-curve tests: 20 entities a month from 2024-01 to 2025-09, which
the target `gemma` (declared cutoff 2024-08-31) knew 15 of until August 2024 and 1 of after (12 in 2025-05 when
`knew_window_month`); a second target `late` was asked about a few only (the full probe stopped at `gemma`)."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.engine import Store
from storage.questions import ProbeRecord, add_probes

__all__ = ["MONTHS", "probed_store"]

MONTHS = [f"{y}-{m:02d}" for y in (2024, 2025) for m in range(1, 13)][:21]  # 2024-01 .. 2025-09


async def probed_store(store: Store, *, knew_window_month: bool) -> None:
    """Entities of every month with verdicts of `gemma` (in both languages when unknown, up to the first "known"
    otherwise) and of `late` on a few only: the full probe stopped at `gemma`, which knew the others."""
    from storage.models import Entity

    rates = {m: (15 if m < "2024-09" else 1) for m in MONTHS}
    if knew_window_month:
        rates["2025-05"] = 12
    probes: list[ProbeRecord] = []
    async with store.transaction() as s:
        eid = 0
        for m in MONTHS:
            y, mo = (int(x) for x in m.split("-"))
            for i in range(20):
                eid += 1
                s.add(Entity(id=eid, source="f", external_id=str(eid), domain="music", name=f"e{eid}",
                             occurred_at=datetime(y, mo, 1 + i, 12, tzinfo=UTC), content_hash="x"))
                known = i < rates[m]
                for lang in (["en"] if known else ["en", "fr"]):
                    probes.append(ProbeRecord(entity_id=eid, target_model="gemma", lang=lang, prompt="p", response="r", known=known,
                                              matched_facts=(), reason="", judge="fact-matcher", prompt_version="v",
                                              created_at=datetime(2026, 1, 1, tzinfo=UTC)))
                if not known and i % 4 == 0:
                    probes.append(ProbeRecord(entity_id=eid, target_model="late", lang="en", prompt="p", response="r", known=False,
                                              matched_facts=(), reason="", judge="fact-matcher", prompt_version="v",
                                              created_at=datetime(2026, 1, 1, tzinfo=UTC)))
        await s.flush()
        await add_probes(s, probes)
