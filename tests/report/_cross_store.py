"""One store every view reads (issue 45 item 6): the strategy store (`tests.report._strategy_store`: targets alpha and
beta; alpha under cpt-lora and memit, beta under cpt-lora; three monthly snapshots, beta excluded from two entities
of 2025-02) with

- alpha's cpt-lora jobs run with three training seeds (0, 1, 2) on 2025-01 and 2025-02 (seeds 1 and 2 answer like
  a weaker model),
- locality counts in the jobs' summaries: every alpha job on both snapshots, and beta's en job on 2025-01 only (4
  questions right before, about 2 entities: too few for kept %, wherever it is shown),
- an entity of 2025-01 that no job run here answered (`EXTRA`: it joined the snapshot's items later), and
- two submitted packs on 2025-01 (both answer that entity too): `gamma`, a copy of beta's answers (it learned), and `delta`, the same with every
  injected answer of the en-trained job replaced by the base model's (en did not learn);
- beta's in-context track on 2025-01 (the en or fr document in the prompt, and none: the floor).

`pack_rows` gives a submitted pack's predictions (`clkt.packs.format.PredictionRow`), to compute its metrics.json.
"""

from __future__ import annotations

import gzip
import json
import random
from datetime import date
from typing import Any

from sqlmodel import col, select

from clkt.evaluate.summary import EntityKept, LocalityCounts
from clkt.packs.format import PredictionRow
from storage.engine import Store
from storage.gpu_jobs import results_for_snapshot
from storage.submissions import NewSubmission, add_submission
from tests.report._strategy_store import seed_strategy_store
from tests.report._window_store import PERIODS, WindowStore, add_seed_jobs

__all__ = ["SUBMITTED", "pack_rows", "seed_cross_store"]

SEEDED = PERIODS[:2]
EXTRA = 900  # an entity of 2025-01 only the submitted packs answered
SUBMITTED = {"gamma": False, "delta": True}  # name -> whether its en job's injected answers are the base's


def _loc(per_entity: list[tuple[int, int, int]], lang: str = "fr") -> dict[str, Any]:
    ents = [EntityKept(entity=e, base_right=b, kept=k) for e, b, k in per_entity]
    kept, right = sum(k for _, _, k in per_entity), sum(b for _, b, _ in per_entity)
    c = LocalityCounts(n=right + 2, kept=kept, lost=right - kept, gained=1, entities=ents)
    return {"generate": {lang: c.model_dump(mode="json")}}


async def _seeds(store: Store, info: WindowStore) -> None:
    await add_seed_jobs(store, info, target="alpha", snapshot_ids=[info.snapshots[p] for p in SEEDED], seeds=[1, 2],
                        rng=random.Random(5))


async def _locality(store: Store, info: WindowStore) -> None:
    from storage.models import GpuJob

    s1 = info.snapshots[PERIODS[0]]
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob).order_by(col(GpuJob.id)))).scalars().all():
            if job.snapshot_id not in [info.snapshots[p] for p in SEEDED]:
                continue
            if job.target_model == "alpha":
                loc = _loc([(501, 3, 3), (502, 3, 2), (503 + job.seed, 2, 1)])
            elif job.snapshot_id == s1 and job.train_lang == "en":
                loc = _loc([(501, 2, 2), (502, 2, 1)])
            else:
                continue
            job.summary = {"selection_scorer": "generate", "scorers": ["generate", "option-loglik"], "scores": [], "locality": loc}


async def _items(store: Store, sid: str) -> dict[int, tuple[int, int]]:
    """The snapshot's items (every question a test one, answer A); store question row -> (public qid, public entity)."""
    from storage.models import Question, SnapshotItem

    public = await _public(store, sid)
    async with store.transaction() as s:
        for q in (await s.execute(select(Question).where(col(Question.id).in_(list(public))))).scalars().all():
            s.add(SnapshotItem(snapshot_id=sid, question_id=q.id, entity_id=q.entity_id, split="test",
                               option_order=[0, 1, 2, 3], answer_letter="A"))
    return public


_PACKS: dict[str, list[PredictionRow]] = {}


async def _extra_entity(store: Store, sid: str) -> list[int]:
    """An entity of the snapshot that no job run here answered (only the submitted packs do): its question rows."""
    from datetime import UTC, datetime

    from storage.models import Entity, Question

    async with store.transaction() as s:
        s.add(Entity(id=EXTRA, source="fixture", external_id=f"{sid}/{EXTRA}", domain="movies", name="late entity",
                     occurred_at=datetime(2025, 1, 20, tzinfo=UTC), content_hash="x"))
        await s.flush()
        for q in range(3):
            s.add(Question(id=EXTRA * 10 + q, entity_id=EXTRA, slot=f"x{q}", lang="en", question="q?",
                           options=["a", "b", "c", "d"], answer_index=0, evidence="x", generator="fixture",
                           prompt_version="v1"))
    return [EXTRA * 10 + q for q in range(3)]


def _extra_rows(qids: list[int], public: dict[int, tuple[int, int]]) -> list[PredictionRow]:
    out = []
    for q in qids:
        for train in ("en", "fr"):
            for lang in ("en", "fr", "ja"):
                for variant in ("base", "injected"):
                    ok = variant == "injected" and lang == train
                    out.append(PredictionRow(train_lang=train, scorer="generate", variant=variant, lang=lang,
                                             qid=public[q][0], entity_id=public[q][1], domain="movies",
                                             predicted="A" if ok else "B", correct=ok))
    return out


async def _submit(store: Store, info: WindowStore) -> None:
    sid = info.snapshots[PERIODS[0]]
    extra = await _extra_entity(store, sid)
    public = await _items(store, sid)
    async with store.session() as s:
        results = [r for r in await results_for_snapshot(s, sid) if r.target_model == "beta" and r.split == "test"]
    base = {(r.train_lang, r.scorer, r.lang, r.question_id): r for r in results if r.variant == "base"}
    for name, flat in SUBMITTED.items():
        rows = []
        for r in results:
            src = base[(r.train_lang, r.scorer, r.lang, r.question_id)] if flat and r.train_lang == "en" else r
            qid, ent = public[r.question_id]
            rows.append(PredictionRow(train_lang=r.train_lang, scorer=r.scorer, variant=r.variant, lang=r.lang, qid=qid,
                                      entity_id=ent, domain=r.domain, predicted=src.predicted, correct=src.correct))
        rows += _extra_rows(extra, public)
        _PACKS[name] = rows
        lines = [json.dumps(p.model_dump(mode="json", exclude={"raw"})) for p in rows]
        async with store.transaction() as s:
            await add_submission(s, NewSubmission(
                pack_sha256=name.ljust(64, "0"), snapshot_id=sid, target_name=name, model=f"org/{name}",
                model_revision="abc123", weights_sha256=None, kind="instruct", cutoff=date(2024, 1, 1), strategy="cpt-lora",
                train_langs=["en", "fr"], scorers=["generate"], format_version=1, clkt_version="0.1.0",
                predictions=len(lines), claims_match=True, claims_note="", metrics={}, manifest={"environment": {}},
                answers=gzip.compress(("\n".join(lines) + "\n").encode()),
            ))


def pack_rows(name: str) -> list[PredictionRow]:
    """The predictions of the submitted pack `name` (after `seed_cross_store`)."""
    return list(_PACKS[name])


async def _incontext(store: Store, info: WindowStore) -> None:
    """Beta's in-context track on 2025-01: the en or fr document in the prompt, the question in every language."""
    from storage.incontext import NO_CONTEXT, InContextRecord, add_incontext_answers

    sid = info.snapshots[PERIODS[0]]
    public = await _public(store, sid)
    rng = random.Random(3)
    records = [InContextRecord(snapshot_id=sid, target="beta", qid=qid, entity_id=ent, context_lang=c, lang=lang,
                               status="answered", letter="A", correct=rng.random() < (0.3 if c == NO_CONTEXT else 0.8),
                               truncated=False)
               for qid, ent in public.values() for c in ("en", "fr", NO_CONTEXT) for lang in ("en", "fr", "ja")]
    async with store.transaction() as s:
        await add_incontext_answers(s, records)


async def _public(store: Store, sid: str) -> dict[int, tuple[int, int]]:
    """The snapshot's questions: store question row -> (public qid, public entity id)."""
    from clkt.snapshots.ids import stable_entity_id, stable_qid
    from storage.models import Entity, Question

    async with store.session() as s:
        rows = (await s.execute(select(Question, Entity).join(Entity, col(Entity.id) == col(Question.entity_id)))).all()
    return {q.id: (stable_qid(e.source, e.external_id, q.slot), stable_entity_id(e.source, e.external_id))
            for q, e in rows if e.external_id.startswith(f"{sid}/")}


async def seed_cross_store(store: Store) -> WindowStore:
    info = await seed_strategy_store(store)
    await _seeds(store, info)
    await _locality(store, info)
    await _incontext(store, info)
    await _submit(store, info)
    return info
