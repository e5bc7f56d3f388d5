"""A store with a window of snapshots for the leaderboard tests: spec `lb`, three monthly snapshots (2025-01 to
2025-03) of 12 entities with 3 questions each, answered in en, fr and ja by two targets trained in en and fr
(cpt-lora; `generate` for both, `option-loglik` for alpha too), base and injected.

Validity (through `storage.targets`, as the targets-over-time work fills it): 2025-01 ready for both; 2025-02
ready for both, beta having recognised two of its entities (exclusions); 2025-03 ready for alpha, `probing`
for beta. Also a superseded 2025-02 snapshot and a snapshot of another spec, which the window never reads.
Predictions are seeded: alpha learns and transfers better than beta.

Seeding writes some ten thousand results (about 1.5 s of a core): each process seeds a template store once per
`seed` and an empty SQLite store gets the template's rows copied in (`_copy_rows`), the same rows with the same
ids; any other store (PostgreSQL, one that already holds rows) is seeded afresh.
"""

from __future__ import annotations

import atexit
import copy
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection

from storage.engine import Store
from storage.enums import SnapshotTargetStatus
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.targets import TargetIdentity, add_exclusions, record_snapshot_target, sync_targets

__all__ = ["LANGS", "PERIODS", "SPEC", "TARGETS", "WindowStore", "add_seed_jobs", "seed_window_store"]

SPEC = "lb"
PERIODS = ("2025-01", "2025-02", "2025-03")
LANGS = ("en", "fr", "ja")
TRAINS = ("en", "fr")
TARGETS = ("alpha", "beta")
ENTITIES = 12
QUESTIONS_PER_ENTITY = 3


@dataclass
class WindowStore:
    snapshots: dict[str, str] = field(default_factory=dict)  # period -> snapshot id
    entity_of: dict[int, int] = field(default_factory=dict)  # question id -> entity id
    excluded: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # (snapshot, target) -> entity ids
    ready: set[tuple[str, str]] = field(default_factory=set)
    superseded: str = ""
    other_spec: str = ""


def _skill(target: str) -> tuple[float, float]:
    return (0.85, 0.6) if target == "alpha" else (0.6, 0.35)  # (train language, other languages)


def _records(rng: random.Random, target: str, train: str, qids: list[int], scorers: tuple[str, ...]) -> list[ResultRecord]:
    own, other = _skill(target)
    out: list[ResultRecord] = []
    for scorer in scorers:
        for q in qids:
            for lang in LANGS:
                for variant in ("base", "injected"):
                    p = 0.25 if variant == "base" else own if lang == train else other
                    ok = rng.random() < p
                    pred = "A" if ok else rng.choice("BCD")
                    if scorer == "generate" and variant == "base" and q % 11 == 0:
                        pred, ok = None, False  # no letter
                    out.append(ResultRecord(question_id=q, lang=lang, variant=variant, scorer=scorer, split="test",
                                            predicted=pred, correct=ok))
    return out


_TEMPLATES: dict[int, tuple[Path, WindowStore]] = {}  # seed -> (the seeded template store, what it holds)


async def seed_window_store(store: Store, *, seed: int = 7) -> WindowStore:
    """The window's rows in `store` (see the module's docstring); what was written, for the test's assertions."""
    if store.sqlite_file is None or not await _is_empty(store):
        return await _seed(store, seed=seed)
    if seed not in _TEMPLATES:
        folder = Path(tempfile.mkdtemp(prefix="clkt-window-store-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        async with Store(url=f"sqlite+aiosqlite:///{folder / 'template.db'}") as template:
            _TEMPLATES[seed] = (folder / "template.db", await _seed(template, seed=seed))
    path, info = _TEMPLATES[seed]
    await _copy_rows(store, path)
    return copy.deepcopy(info)


def _tables(conn: Connection, schema: str) -> list[str]:
    """The store's tables, each after the tables it references (the order its rows can be copied in)."""
    run = conn.exec_driver_sql
    names = [r[0] for r in run(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' "
                                "AND name NOT LIKE 'sqlite_%' AND name != 'alembic_version' ORDER BY name")]
    refs = {t: {r[2] for r in run(f'PRAGMA {schema}.foreign_key_list("{t}")')} - {t} for t in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        ordered += [t for t in names if t not in ordered and refs[t] <= set(ordered)]
    return ordered


async def _is_empty(store: Store) -> bool:
    async with store.engine.connect() as conn:
        tables = await conn.run_sync(_tables, "main")
        return not any([(await conn.execute(text(f'SELECT EXISTS (SELECT 1 FROM "{t}")'))).scalar() for t in tables])


async def _copy_rows(store: Store, template: Path) -> None:
    """Every row of every table of `template` into the (empty) `store`, ids included, in one transaction."""
    async with store.engine.connect() as conn:
        await conn.exec_driver_sql("ATTACH DATABASE ? AS template", (str(template),))
        try:
            for t in await conn.run_sync(_tables, "template"):
                await conn.exec_driver_sql(f'INSERT INTO main."{t}" SELECT * FROM template."{t}"')
            await conn.commit()
        finally:
            await conn.rollback()
            await conn.exec_driver_sql("DETACH DATABASE template")


async def _seed(store: Store, *, seed: int) -> WindowStore:
    from storage.models import Entity, GpuJob, LeaseStatus, Question, Snapshot, SnapshotStatus

    info = WindowStore()
    rng = random.Random(seed)
    async with store.transaction() as s:
        await sync_targets(s, [TargetIdentity(name=t, model=f"org/{t}", kind="instruct") for t in TARGETS])
        eid = qid = 0
        ids = [*((p, f"{SPEC}-{p}-{i:012d}") for i, p in enumerate(PERIODS)), ("2025-02", f"{SPEC}-2025-02-old000000000"),
               ("2025-02", "other-2025-02-000000000000")]
        for period, sid in ids:
            spec = "other" if sid.startswith("other") else SPEC
            status = SnapshotStatus.superseded if "old" in sid else SnapshotStatus.frozen
            s.add(Snapshot(id=sid, spec=spec, period=period, status=status, manifest={"languages": list(LANGS)},
                           superseded_by=info.snapshots.get("2025-02") if "old" in sid else None))
            if spec == SPEC and status is SnapshotStatus.frozen:
                info.snapshots[period] = sid
            elif spec == SPEC:
                info.superseded = sid
            else:
                info.other_spec = sid
            year, month = (int(x) for x in period.split("-"))
            for _ in range(ENTITIES):
                eid += 1
                s.add(Entity(id=eid, source="fixture", external_id=f"{sid}/{eid}", domain=("movies", "music", "sports")[eid % 3],
                             name=f"entity {eid}", occurred_at=datetime(year, month, 10, tzinfo=UTC), content_hash="x"))
                for _ in range(QUESTIONS_PER_ENTITY):
                    qid += 1
                    info.entity_of[1000 + qid] = eid
        await s.flush()
        for q, e in info.entity_of.items():
            s.add(Question(id=q, entity_id=e, slot=f"s{q}", lang="en", question=f"q{q}?", options=["a", "b", "c", "d"],
                           answer_index=0, evidence="x", generator="fixture", prompt_version="v1"))
    snap_ids = [*info.snapshots.values(), info.superseded, info.other_spec]
    async with store.transaction() as s:
        for sid in snap_ids:
            await enqueue_gpu_jobs(s, snapshot_id=sid, targets=list(TARGETS), strategies=["cpt-lora"], train_langs=list(TRAINS),
                                   max_attempts=1)
        s1, s2, s3 = (info.snapshots[p] for p in PERIODS)
        for sid in (s1, s2, info.superseded, info.other_spec):
            for t in TARGETS:
                await record_snapshot_target(s, snapshot_id=sid, target=t, status=SnapshotTargetStatus.ready, entities=ENTITIES)
                info.ready.add((sid, t))
        await record_snapshot_target(s, snapshot_id=s3, target="alpha", status=SnapshotTargetStatus.ready, entities=ENTITIES)
        info.ready.add((s3, "alpha"))
        await record_snapshot_target(s, snapshot_id=s3, target="beta", status=SnapshotTargetStatus.probing, entities=ENTITIES)
        # beta recognised two entities of 2025-02: they leave its results for that snapshot
        first = ENTITIES + 1
        await record_snapshot_target(s, snapshot_id=s2, target="beta", status=SnapshotTargetStatus.ready, entities=ENTITIES, excluded=2)
        await add_exclusions(s, snapshot_id=s2, target="beta", entities=[(first, "known"), (first + 5, "known")])
        info.excluded[(s2, "beta")] = {first, first + 5}
    from sqlmodel import col, select

    by_snapshot: dict[str, list[int]] = {}
    for q, e in info.entity_of.items():
        by_snapshot.setdefault(snap_ids[(e - 1) // ENTITIES], []).append(q)
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).order_by(col(GpuJob.id)))).scalars().all()
        for job in jobs:
            assert job.id is not None
            scorers = ("generate", "option-loglik") if job.target_model == "alpha" else ("generate",)
            recs = _records(rng, job.target_model, job.train_lang, sorted(by_snapshot[job.snapshot_id]), scorers)
            await write_job_results(s, job.id, recs)
            job.status, job.attempts = LeaseStatus.done, 1
    return info


async def add_seed_jobs(store: Store, info: WindowStore, *, target: str, snapshot_ids: list[str], seeds: list[int],
                        rng: random.Random) -> None:
    """`target`'s cpt-lora jobs of the other training seeds `seeds` (0 is there) on `snapshot_ids`, in both train
    languages, answering like a weaker model (beta): their answers differ from seed 0's on the same questions."""
    from sqlmodel import col, select

    from storage.models import GpuJob, LeaseStatus

    async with store.transaction() as s:
        for sid in snapshot_ids:
            await enqueue_gpu_jobs(s, snapshot_id=sid, targets=[target], strategies=["cpt-lora"], train_langs=list(TRAINS),
                                   max_attempts=1, seeds=[0, *seeds])
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.seed).in_(seeds)).order_by(col(GpuJob.id)))).scalars().all()
        for job in jobs:
            assert job.id is not None
            at = list(info.snapshots.values()).index(job.snapshot_id)
            qids = sorted(q for q, e in info.entity_of.items() if (e - 1) // ENTITIES == at)
            await write_job_results(s, job.id, _records(rng, "beta", job.train_lang, qids, ("generate", "option-loglik")))
            job.status, job.attempts = LeaseStatus.done, 1
