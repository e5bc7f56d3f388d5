"""The leaderboard's reads: a spec's frozen snapshots, which of them are valid for which target (and minus which
entities), their finished GPU jobs, those jobs' result packs (`storage.result_packs`) and, for the predictions
CSV, their per-question results.

A snapshot is in a target's results when its `snapshot_target` row is `ready` (`storage.targets`); that
target's questions of the snapshot are those whose entity is not among its exclusions. Superseded snapshots
(a forced rebuild replaced them) are never read. Records leave this module as frozen dataclasses; the
statistics over them are `clkt.report.leaderboard`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.enums import LeaseStatus, SnapshotStatus, SnapshotTargetStatus
from storage.fingerprints import window_fingerprint
from storage.models import (
    GpuJob,
    Question,
    QuestionResult,
    ResultPack,
    Retraction,
    Snapshot,
    SnapshotExclusion,
    SnapshotTarget,
    TargetModel,
)
from storage.result_packs import ResultPackRecord, result_packs, without_questions
from storage.submissions import submitted_names
from storage.types import stored_id

__all__ = [
    "KnownNames",
    "PredictionRow",
    "WindowData",
    "WindowJob",
    "WindowSnapshot",
    "iter_predictions",
    "known_names",
    "retracted_questions",
    "spec_names",
    "window_data",
    "window_fingerprint",
    "window_snapshots",
]

_CHUNK = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowSnapshot:
    id: str
    spec: str
    period: str
    built_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowJob:
    """A finished GPU job of a snapshot in the window."""

    id: int
    snapshot_id: str
    target: str
    strategy: str
    train_lang: str
    # its summary's locality counts as stored (scorer -> test language -> counts; `clkt.evaluate.summary`): empty
    # when its snapshot had no locality split
    locality: dict[str, Any] = field(default_factory=dict)
    seed: int = 0  # the job's training seed (`spec.seeds`)
    # the open track's control split, per layer (`clkt.report.open_control.ControlTally` as JSON), from its stored
    # answers (`clkt.report.open_board.with_open_splits`); empty without one
    control: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowData:
    """What the leaderboard pools: the snapshots, their validity per target, exclusions, jobs and packs."""

    snapshots: tuple[WindowSnapshot, ...]
    ready: frozenset[tuple[str, str]]  # (snapshot id, target) whose snapshot_target row is ready
    exclusions: dict[tuple[str, str], frozenset[int]]  # (snapshot id, target) -> excluded entity ids
    jobs: tuple[WindowJob, ...]  # done jobs of the snapshots (every target, also those the snapshot is not valid for)
    packs: tuple[ResultPackRecord, ...] = field(default=())  # of the jobs that count (ready for their target)
    # store entity id -> public id (`clkt.snapshots.ids`) of the packs' entities: the order of the bootstrap's
    # draws (`clkt.report.pooled.Draws`), so that the same results give the same intervals in any store
    public_entities: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownNames:
    """The names a leaderboard query may use: targets of the registry, of a job or of a submitted pack, strategies
    and result scorers of the stored jobs."""

    targets: frozenset[str]
    strategies: frozenset[str]
    scorers: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionRow:
    """One stored answer behind the leaderboard (the predictions CSV), in the columns' order."""

    snapshot_id: str
    question_id: int
    lang: str
    target: str
    strategy: str
    job_id: int
    train_lang: str
    variant: str
    scorer: str
    entity_id: int
    split: str
    predicted: str | None
    correct: bool


async def spec_names(session: AsyncSession) -> list[str]:
    """The specs that have a frozen snapshot."""
    stmt = select(col(Snapshot.spec)).where(col(Snapshot.status) == SnapshotStatus.frozen).distinct().order_by(col(Snapshot.spec))
    return [str(s) for s in (await session.execute(stmt)).scalars().all()]


async def window_snapshots(session: AsyncSession, spec: str) -> list[WindowSnapshot]:
    """The spec's frozen (not superseded) snapshots, oldest period first."""
    stmt = (
        select(col(Snapshot.id), col(Snapshot.spec), col(Snapshot.period), col(Snapshot.built_at))
        .where(col(Snapshot.spec) == spec, col(Snapshot.status) == SnapshotStatus.frozen)
        .order_by(col(Snapshot.period), col(Snapshot.built_at))
    )
    return [WindowSnapshot(id=i, spec=s, period=p, built_at=b) for i, s, p, b in (await session.execute(stmt)).all()]


async def known_names(session: AsyncSession) -> KnownNames:
    targets = set((await session.execute(select(col(TargetModel.name)))).scalars().all())
    targets.update(await submitted_names(session))  # a submitted pack's target (`storage.submissions`)
    targets.update((await session.execute(select(col(GpuJob.target_model)).distinct())).scalars().all())
    strategies = set((await session.execute(select(col(GpuJob.strategy)).distinct())).scalars().all())
    scorers = set((await session.execute(select(col(ResultPack.scorer)).distinct())).scalars().all())
    # jobs whose results were stored before packs existed: their results' scorers (by the job index)
    unpacked = select(col(GpuJob.id)).where(~select(col(ResultPack.job_id)).where(col(ResultPack.job_id) == col(GpuJob.id)).exists())
    stmt = select(col(QuestionResult.scorer)).where(col(QuestionResult.job_id).in_(unpacked)).distinct()
    scorers.update((await session.execute(stmt)).scalars().all())
    return KnownNames(targets=frozenset(targets), strategies=frozenset(strategies), scorers=frozenset(scorers))


async def retracted_questions(session: AsyncSession, snapshot_ids: Sequence[str]) -> dict[str, frozenset[int]]:
    """Snapshot id -> its retracted questions as result packs key them (`clkt snapshot retract`): an MCQ by this
    store's question row, an open question (which has no row) by its public qid. Every view of the board leaves
    them out, as the snapshot's report does."""
    out: dict[str, set[int]] = defaultdict(set)
    for i in range(0, len(snapshot_ids), _CHUNK):
        q = select(col(Retraction.snapshot_id), col(Retraction.question_id), col(Retraction.qid)).where(
            col(Retraction.snapshot_id).in_(list(snapshot_ids[i : i + _CHUNK])))
        for sid, row, qid in (await session.execute(q)).all():
            out[str(sid)].add(int(row) if row is not None else int(qid))
    return {k: frozenset(v) for k, v in out.items()}


async def window_data(
    session: AsyncSession, snapshots: Sequence[WindowSnapshot], *, targets: Collection[str] | None = None,
    strategies: Collection[str] | None = None, scorer: str | None = None,
) -> WindowData:
    """Validity, exclusions, done jobs and the packs of the jobs that count, for the given snapshots (of the
    given targets / strategies / result scorer when named)."""
    ids = [s.id for s in snapshots]
    ready: set[tuple[str, str]] = set()
    excl: dict[tuple[str, str], set[int]] = defaultdict(set)
    jobs: list[WindowJob] = []
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        st = select(col(SnapshotTarget.snapshot_id), col(SnapshotTarget.target_name)).where(
            col(SnapshotTarget.snapshot_id).in_(chunk), col(SnapshotTarget.status) == SnapshotTargetStatus.ready
        )
        ready.update((s, t) for s, t in (await session.execute(st)).all())
        ex = select(col(SnapshotExclusion.snapshot_id), col(SnapshotExclusion.target_name), col(SnapshotExclusion.entity_id)).where(
            col(SnapshotExclusion.snapshot_id).in_(chunk)
        )
        for s, t, e in (await session.execute(ex)).all():
            excl[(s, t)].add(int(e))
        jq = select(col(GpuJob.id), col(GpuJob.snapshot_id), col(GpuJob.target_model), col(GpuJob.strategy), col(GpuJob.train_lang),
                    col(GpuJob.summary), col(GpuJob.seed)).where(
            col(GpuJob.snapshot_id).in_(chunk), col(GpuJob.status) == LeaseStatus.done
        )
        if targets is not None:
            jq = jq.where(col(GpuJob.target_model).in_(sorted(targets)))
        if strategies is not None:
            jq = jq.where(col(GpuJob.strategy).in_(sorted(strategies)))
        jobs.extend(WindowJob(id=stored_id(j), snapshot_id=s, target=t, strategy=st_, train_lang=lang, seed=int(seed),
                              locality=dict((summary or {}).get("locality") or {}) if isinstance(summary, dict) else {})
                    for j, s, t, st_, lang, summary, seed in (await session.execute(jq.order_by(col(GpuJob.id)))).all())
    counted = [j.id for j in jobs if (j.snapshot_id, j.target) in ready]
    retracted = await retracted_questions(session, ids)
    snapshot_of = {j.id: j.snapshot_id for j in jobs}
    packs = [without_questions(p, retracted.get(snapshot_of[p.job_id], frozenset()))
             for p in await result_packs(session, counted, scorer=scorer)]
    return WindowData(
        snapshots=tuple(snapshots), ready=frozenset(ready), exclusions={k: frozenset(v) for k, v in excl.items()},
        jobs=tuple(jobs), packs=tuple(packs),
    )


async def iter_predictions(
    session: AsyncSession, jobs: Sequence[WindowJob], exclusions: dict[tuple[str, str], frozenset[int]], *,
    scorer: str | None = None, split: str = "test",
) -> AsyncIterator[PredictionRow]:
    """Every stored answer of `jobs` (of the split, and of one result scorer when named) whose entity is not
    excluded for the job's target in its snapshot: by job, then question id, language, variant, scorer."""
    by_id = {j.id: j for j in jobs}
    ids = sorted(by_id)
    for i in range(0, len(ids), 50):
        stmt = (
            select(col(QuestionResult.job_id), col(QuestionResult.question_id), col(QuestionResult.lang), col(QuestionResult.variant),
                   col(QuestionResult.scorer), col(Question.entity_id), col(QuestionResult.split), col(QuestionResult.predicted),
                   col(QuestionResult.correct))
            .join(Question, col(Question.id) == col(QuestionResult.question_id))
            .where(col(QuestionResult.job_id).in_(ids[i : i + 50]), col(QuestionResult.split) == split)
            .order_by(col(QuestionResult.job_id), col(QuestionResult.question_id), col(QuestionResult.lang),
                      col(QuestionResult.variant), col(QuestionResult.scorer))
        )
        if scorer is not None:
            stmt = stmt.where(col(QuestionResult.scorer) == scorer)
        result = await session.stream(stmt)
        async for job_id, qid, lang, variant, sc, entity, sp, predicted, correct in result:
            j = by_id[int(job_id)]
            if int(entity) in exclusions.get((j.snapshot_id, j.target), frozenset()):
                continue
            yield PredictionRow(
                snapshot_id=j.snapshot_id, question_id=int(qid), lang=lang, target=j.target, strategy=j.strategy, job_id=j.id,
                train_lang=j.train_lang, variant=variant, scorer=sc, entity_id=int(entity), split=sp, predicted=predicted,
                correct=bool(correct),
            )
