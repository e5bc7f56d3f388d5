"""Open answers stored for the finished jobs of a seeded snapshot (`tests.publish.conftest.seed_open_snapshot`): every
open question of its frozen folder answered in every language, base and injected, with every kind of verdict."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from sqlmodel import col, select

from clkt.openqa.frozen import load_open_questions
from clkt.snapshots.content import load_item_refs
from storage.engine import Store
from storage.models import GpuJob
from storage.open_results import OpenResultRecord, write_open_results
from storage.snapshots import SnapshotRecord, get_snapshot

__all__ = ["TARGET", "frozen_folder", "store_open_answers"]

TARGET = "gemma-3-270m"  # `finish_jobs`' target


def _record(q_qid: int, entity: int, lang: str, variant: str, rng: random.Random, *, split: str = "test") -> OpenResultRecord:
    roll = rng.random()
    verdict, other, answer_lang, reason = (
        ("CORRECT", False, lang, "alias") if roll < 0.4 else
        ("INCORRECT", True, "en", "other_language") if roll < 0.6 else
        ("NOT_ATTEMPTED", False, None, "empty answer") if roll < 0.7 else
        ("INCORRECT", False, lang, "no alias matched"))
    answer = "" if verdict == "NOT_ATTEMPTED" else f'Osric, "the director" — {lang} {variant} {q_qid % 97}'
    return OpenResultRecord(open_qid=q_qid, entity_id=entity, domain="movies", fact="film.director", lang=lang,
                            variant=variant, scorer="open-normaliser", split=split, verdict=verdict,
                            other_language=other, answer=answer, answer_lang=answer_lang, reason=reason)


def frozen_folder(snap: SnapshotRecord) -> Path:
    assert snap.export_path is not None
    return Path(snap.export_path)


async def store_open_answers(store: Store, sid: str, *, odd: bool = False) -> Path:
    """Every finished job of `sid` answered every open question of the frozen folder in every language, base and
    injected (and one control-split answer a job, which no export carries; with `odd`, the first job's first answer
    has a verdict no scorer gives, no reason and no language); the frozen folder."""
    async with store.session() as s:
        frozen = frozen_folder(await get_snapshot(s, sid))
        entity_rows = {it.entity_id: it.entity_row for it in await load_item_refs(s, sid)}
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == sid))).scalars().all()
    questions = load_open_questions(frozen)
    assert questions, "the seeded snapshot has open questions"
    async with store.transaction() as s:
        for job in jobs:
            assert job.id is not None
            rng = random.Random(f"{sid}/{job.train_lang}")
            recs = [_record(q.qid, q.entity_id, lang, v, rng) for q in questions for lang in q.question.golds
                    for v in ("base", "injected")]
            recs.append(_record(12345, 678, "en", "base", rng, split="control"))
            if odd and job is jobs[0]:
                recs[0] = replace(recs[0], verdict="MAYBE", reason="", answer_lang=None)
            await write_open_results(s, job.id, recs, entity_rows=entity_rows)
    return frozen
