"""The GPU job queue's repository: enqueue a snapshot's jobs, lease them, write a job's results, read them back.

A job is one (snapshot, target model, strategy, train language, seed); the unique constraint makes
`enqueue_gpu_jobs` idempotent. Jobs leave this module as frozen `GpuJobRecord`s, never as rows. The lease
functions (`claim_gpu_jobs`, `heartbeat_gpu_job`, `complete_gpu_job`, `fail_gpu_job`, `release_gpu_job`,
`release_gpu_jobs_of`) are the generic lease machinery of `storage.claim` applied to `GpuJob`: the same
statements, fenced on the owner (a caller whose lease is gone gets `LeaseLost`, re-exported here).
Results are written by `write_job_results` in the caller's transaction,
together with the fenced completion of the job (see `clkt.inject.consumer`). Results reference this store's
question rows; `results_for_snapshot` also returns each question's identity (entity source and external id,
slot), from which `clkt.snapshots.ids` derives the public qid that the snapshot's files use, and one base answer
set per (target, scorer) (`one_base_set`): every reader (the report, the in-context floor) reads the same one.

A job's config is stored in one shape, a `GpuSettings` as JSON (`{}`: none of its own, the consumer's `[gpu]`), and
read back typed (`GpuJobRecord.config`; a stored config that no longer validates is `config_error`, and the job
fails for good when claimed). Its summary is the JSON of the typed summary the consumer stores
(`clkt.evaluate.summary.JobSummary`, above this module: written from the model, read back as JSON values that
`JobSummary.from_stored` validates); `{}` until the job is done.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, JsonValue, ValidationError
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.config import GpuSettings
from storage import claim as _lease
from storage.claim import LeaseLost
from storage.models import Entity, GpuJob, LeaseStatus, Question, QuestionResult
from storage.result_packs import write_result_packs
from storage.tasks import insert_ignore
from storage.types import affected_rows, stored_id, utcnow

__all__ = [
    "GpuJobRecord",
    "JobResultRow",
    "LeaseLost",
    "ResultRecord",
    "claim_gpu_jobs",
    "complete_gpu_job",
    "enqueue_gpu_jobs",
    "fail_gpu_job",
    "get_job",
    "gpu_job_counts",
    "heartbeat_gpu_job",
    "jobs_for_snapshot",
    "one_base_set",
    "release_gpu_job",
    "release_gpu_jobs_of",
    "results_for_snapshot",
    "set_gpu_job_config",
    "snapshot_jobs_finished",
    "write_job_results",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuJobRecord:
    """One `GpuJob` row: a (snapshot, target model, strategy, train language, seed) job and its lease state."""

    id: int
    snapshot_id: str
    target_model: str
    strategy: str
    train_lang: str
    config: GpuSettings | None  # the job's own settings; None: the consumer's `[gpu]`
    status: LeaseStatus
    lease_owner: str | None
    lease_expires_at: datetime | None
    attempts: int
    max_attempts: int
    not_before: datetime
    last_error: str | None
    device: str | None
    best_epoch: int | None
    artifacts_dir: str | None
    summary: dict[str, JsonValue]  # the typed summary the consumer stores on completion, as JSON ({}: not done)
    created_at: datetime
    updated_at: datetime
    config_error: str | None = None  # the stored config does not validate (then `config` is None)
    seed: int = 0  # the training seed of `spec.seeds` the job runs (`clkt.config.spec.training_seed`)
    catch_up: bool = False  # queued for a target that joined after the freeze (claimed after the freezes' jobs)


def _config(raw: Mapping[str, Any] | None) -> tuple[GpuSettings | None, str | None]:
    if not raw:
        return None, None
    try:
        return GpuSettings.model_validate(dict(raw)), None
    except ValidationError as e:
        err = e.errors()[0]
        return None, f"{'.'.join(map(str, err['loc']))}: {err['msg']}" if err["loc"] else err["msg"]


def _config_json(config: GpuSettings | None) -> dict[str, Any]:
    return config.model_dump(mode="json") if config is not None else {}


def _record(row: GpuJob) -> GpuJobRecord:
    assert row.id is not None
    config, config_error = _config(row.config)
    return GpuJobRecord(
        id=row.id, snapshot_id=row.snapshot_id, target_model=row.target_model, strategy=row.strategy,
        train_lang=row.train_lang, config=config, config_error=config_error, status=LeaseStatus(row.status),
        lease_owner=row.lease_owner, lease_expires_at=row.lease_expires_at, attempts=row.attempts,
        max_attempts=row.max_attempts, not_before=row.not_before, last_error=row.last_error, device=row.device,
        best_epoch=row.best_epoch, artifacts_dir=row.artifacts_dir, summary=dict(row.summary or {}),
        created_at=row.created_at, updated_at=row.updated_at, seed=row.seed, catch_up=row.catch_up,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRecord:
    """One scored answer, as the training child reports it."""

    question_id: int
    lang: str
    variant: str  # "base" | "injected"
    scorer: str  # "generate" | "letter-logprob"
    split: str
    predicted: str | None
    correct: bool
    raw: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResultRow:
    """A stored result joined with its job's identity (what metrics and reports read)."""

    job_id: int
    target_model: str
    strategy: str
    train_lang: str
    question_id: int
    lang: str
    variant: str
    scorer: str
    split: str
    predicted: str | None
    correct: bool
    domain: str = ""
    source: str = ""  # the question's identity: entity source, external id and slot
    external_id: str = ""
    slot: str = ""
    entity_id: int = 0  # the question's entity (the report's bootstrap resamples entities)
    seed: int = 0  # the job's training seed


async def enqueue_gpu_jobs(
    session: AsyncSession,
    *,
    snapshot_id: str,
    targets: list[str],
    strategies: list[str],
    train_langs: list[str],
    max_attempts: int,
    config: GpuSettings | None = None,
    seeds: Sequence[int] = (0,),
    catch_up: bool = False,
) -> int:
    """One pending job per (target, strategy, train language, seed) of a snapshot (`config`: their settings;
    None: the consumer's; `seeds`: `spec.seeds`; `catch_up`: for a target that joined after the freeze, claimed
    after the freezes' jobs); returns how many were new."""
    cfg = _config_json(config)
    now = utcnow()
    rows = [
        dict(
            snapshot_id=snapshot_id, target_model=t, strategy=s, train_lang=lang, seed=seed, config=cfg,
            catch_up=catch_up, status=LeaseStatus.pending, attempts=0, max_attempts=max_attempts, not_before=now,
            summary={}, created_at=now, updated_at=now,
        )
        for t in targets
        for s in strategies
        for lang in train_langs
        for seed in seeds
    ]
    return await insert_ignore(session, GpuJob, rows)


async def claim_gpu_jobs(
    session: AsyncSession, *, owner: str, lease: timedelta, limit: int = 1, now: datetime | None = None
) -> list[GpuJobRecord]:
    """Lease up to `limit` claimable jobs (the freezes' jobs before the catch-up's, then lowest id first;
    attempts += 1). In the caller's transaction."""
    return [_record(r) for r in await _lease.claim(session, GpuJob, owner=owner, lease=lease, limit=limit,
                                                   first=(col(GpuJob.catch_up),), now=now)]


async def heartbeat_gpu_job(session: AsyncSession, job_id: int, *, owner: str, lease: timedelta) -> None:
    """Extend the lease `owner` holds on the job; `LeaseLost` when it no longer holds it."""
    await _lease.heartbeat(session, GpuJob, job_id, owner=owner, lease=lease)


async def complete_gpu_job(
    session: AsyncSession,
    job_id: int,
    *,
    owner: str,
    best_epoch: int | None,
    device: str | None,
    artifacts_dir: str | None,
    summary: BaseModel | None = None,
) -> None:
    """Mark the job done (fenced on `owner`, else `LeaseLost`) with its outcome and typed summary (stored as its
    JSON; None: `{}`); the last error is cleared."""
    await _lease.complete(
        session, GpuJob, job_id, owner=owner, best_epoch=best_epoch, device=device, artifacts_dir=artifacts_dir,
        summary=summary.model_dump(mode="json") if summary is not None else {}, last_error=None,
    )


async def fail_gpu_job(
    session: AsyncSession,
    job_id: int,
    *,
    owner: str,
    error: str,
    retry_in: timedelta | None = None,
    permanent: bool = False,
) -> LeaseStatus:
    """Record a failure: `pending` again after `retry_in`, or `failed` when permanent or out of attempts."""
    return await _lease.fail(session, GpuJob, job_id, owner=owner, error=error, retry_in=retry_in, permanent=permanent)


async def set_gpu_job_config(session: AsyncSession, job_id: int, *, owner: str, config: GpuSettings) -> None:
    """Replace the job's config (fenced on `owner`, else `LeaseLost`): what its next attempt runs with (an
    out-of-memory failure halves a batch size). In the caller's transaction, with the failure it explains."""
    res = await session.execute(
        update(GpuJob)
        .where(col(GpuJob.id) == job_id, col(GpuJob.status) == LeaseStatus.leased, col(GpuJob.lease_owner) == owner)
        .values(config=_config_json(config), updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not affected_rows(res):
        raise LeaseLost(f"gpu_job {job_id} is no longer leased by {owner}")


async def release_gpu_job(
    session: AsyncSession,
    job_id: int,
    *,
    owner: str,
    defer: timedelta | None = None,
    refund: bool = True,
    reason: str | None = None,
) -> None:
    """Hand the lease back without counting a failure (shutdown); a lease `owner` no longer holds is left alone."""
    await _lease.release(session, GpuJob, job_id, owner=owner, defer=defer, refund=refund, reason=reason)


async def release_gpu_jobs_of(session: AsyncSession, *, owner: str) -> int:
    """Release every job leased by `owner` (shutdown), refunding the attempt; how many were released."""
    return await _lease.release_owner(session, GpuJob, owner=owner)


async def get_job(session: AsyncSession, job_id: int) -> GpuJobRecord | None:
    row = await session.get(GpuJob, job_id)
    return _record(row) if row is not None else None


async def jobs_for_snapshot(session: AsyncSession, snapshot_id: str) -> list[GpuJobRecord]:
    rows = await session.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == snapshot_id).order_by(col(GpuJob.id)))
    return [_record(r) for r in rows.scalars().all()]


async def gpu_job_counts(session: AsyncSession, snapshot_id: str | None = None) -> dict[str, int]:
    stmt = select(col(GpuJob.status), func.count()).group_by(col(GpuJob.status))
    if snapshot_id is not None:
        stmt = stmt.where(col(GpuJob.snapshot_id) == snapshot_id)
    return {LeaseStatus(s).value: int(n) for s, n in (await session.execute(stmt)).all()}


async def snapshot_jobs_finished(session: AsyncSession, snapshot_id: str) -> bool:
    """True when the snapshot has jobs and none of them is pending or leased."""
    counts = await gpu_job_counts(session, snapshot_id)
    if not counts:
        return False
    return counts.get(LeaseStatus.pending.value, 0) == 0 and counts.get(LeaseStatus.leased.value, 0) == 0


async def _with_stored_base_set(session: AsyncSession, job_id: int, records: list[ResultRecord]) -> list[ResultRecord]:
    """`records` whose base answers are the (snapshot, target)'s stored set where one is: the base answers of its
    first done job (lowest id) that has them, for the questions, languages and scorers that job answered. The
    jobs of a target on a snapshot ask its base model the same questions, answered once (in one dtype:
    `clkt.inject.job.InjectionJob.base_and_model`) and cached; a job run on another kind of device (or before the
    base pass ran in one dtype) may have answered a few otherwise, and the store keeps one set all the same, so
    every view (results, result packs) reads one."""
    if not any(r.variant == "base" for r in records):
        return records
    job = (await session.execute(  # only the columns it needs (a store at an older revision has fewer)
        select(col(GpuJob.snapshot_id), col(GpuJob.target_model)).where(col(GpuJob.id) == job_id))).first()
    if job is None:
        return records
    has_base = select(col(QuestionResult.id)).where(col(QuestionResult.job_id) == col(GpuJob.id),
                                                 col(QuestionResult.variant) == "base")
    first = (await session.execute(
        select(func.min(col(GpuJob.id))).where(
            col(GpuJob.snapshot_id) == job.snapshot_id, col(GpuJob.target_model) == job.target_model,
            col(GpuJob.id) != job_id, col(GpuJob.status) == LeaseStatus.done, has_base.exists())
    )).scalar()
    if first is None:
        return records
    stored = await session.execute(
        select(col(QuestionResult.question_id), col(QuestionResult.lang), col(QuestionResult.scorer),
               col(QuestionResult.predicted), col(QuestionResult.correct), col(QuestionResult.raw))
        .where(col(QuestionResult.job_id) == first, col(QuestionResult.variant) == "base"))
    have = {(q, lang, scorer): (predicted, bool(correct), raw) for q, lang, scorer, predicted, correct, raw in stored.all()}
    out: list[ResultRecord] = []
    for r in records:
        got = have.get((r.question_id, r.lang, r.scorer)) if r.variant == "base" else None
        out.append(r if got is None else replace(r, predicted=got[0], correct=got[1], raw=got[2]))
    return out


async def write_job_results(session: AsyncSession, job_id: int, records: Iterable[ResultRecord]) -> int:
    """Replace the job's results with `records`, and its result packs (`storage.result_packs`) with theirs, in
    the caller's transaction: all or nothing. Its base answers are the (snapshot, target)'s one set where one is
    stored (`_with_stored_base_set`)."""
    await session.execute(delete(QuestionResult).where(col(QuestionResult.job_id) == job_id))
    records = await _with_stored_base_set(session, job_id, list(records))
    rows = [
        dict(
            job_id=job_id, question_id=r.question_id, lang=r.lang, variant=r.variant, scorer=r.scorer,
            split=r.split, predicted=r.predicted, correct=r.correct, raw=r.raw[:2000],
        )
        for r in records
    ]
    total = 0
    for i in range(0, len(rows), 500):
        total += await insert_ignore(session, QuestionResult, rows[i : i + 500])
    await write_result_packs(session, job_id, [(r.question_id, r.lang, r.variant, r.scorer, r.split, r.correct) for r in records])
    return total


async def results_for_snapshot(session: AsyncSession, snapshot_id: str, *, done_only: bool = True) -> list[JobResultRow]:
    stmt = (
        select(
            col(GpuJob.id), col(GpuJob.target_model), col(GpuJob.strategy), col(GpuJob.train_lang),
            col(QuestionResult.question_id), col(QuestionResult.lang), col(QuestionResult.variant),
            col(QuestionResult.scorer), col(QuestionResult.split), col(QuestionResult.predicted),
            col(QuestionResult.correct), col(Entity.domain), col(Entity.source), col(Entity.external_id),
            col(Question.slot), col(Entity.id), col(GpuJob.seed),
        )
        .join(QuestionResult, col(QuestionResult.job_id) == col(GpuJob.id))
        .join(Question, col(Question.id) == col(QuestionResult.question_id))
        .join(Entity, col(Entity.id) == col(Question.entity_id))
        .where(col(GpuJob.snapshot_id) == snapshot_id)
        .order_by(col(GpuJob.id), col(QuestionResult.id))
    )
    if done_only:
        stmt = stmt.where(col(GpuJob.status) == LeaseStatus.done)
    return one_base_set([
        JobResultRow(
            job_id=stored_id(r[0]), target_model=r[1], strategy=r[2], train_lang=r[3], question_id=r[4], lang=r[5],
            variant=r[6], scorer=r[7], split=r[8], predicted=r[9], correct=bool(r[10]), domain=r[11], source=r[12],
            external_id=r[13], slot=r[14], entity_id=stored_id(r[15]), seed=int(r[16]),
        )
        for r in (await session.execute(stmt)).all()
    ])


def one_base_set(rows: Sequence[JobResultRow]) -> list[JobResultRow]:
    """`rows` (in job id order) with every job's base answers taken from one set per (target, scorer): for each
    question and language, the answer of the first job that has one. The jobs of a target on a snapshot share one
    base pass (answered once, in one dtype whatever the strategy's: `clkt.inject.job.InjectionJob.base_and_model`);
    a store written before that (full-ft's fp32 base beside the others' bf16) or by jobs on other kinds of device
    can hold two, and then every view still reads the same one, never whichever job it happened to meet first."""
    first: dict[tuple[str, str, int, str], JobResultRow] = {}
    for r in rows:
        if r.variant == "base":
            first.setdefault((r.target_model, r.scorer, r.question_id, r.lang), r)
    out: list[JobResultRow] = []
    for r in rows:
        f = first.get((r.target_model, r.scorer, r.question_id, r.lang)) if r.variant == "base" else None
        out.append(r if f is None or (f.predicted, f.correct) == (r.predicted, r.correct)
                   else replace(r, predicted=f.predicted, correct=f.correct))
    return out
