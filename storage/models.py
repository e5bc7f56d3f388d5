"""SQLModel tables for the whole flow of DESIGN.md.

Only `storage/` sees these classes; the rest of the product talks to the repositories, which map rows to
and from pydantic models. Statuses are `str` enums so they read well in SQL and in `clkt status`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Index, UniqueConstraint, false, text
from sqlmodel import Field, SQLModel

from storage._columns import json_field as _json
from storage._columns import ts_field as _ts
from storage._columns import ts_opt_field as _ts_opt
from storage.enums import (
    EntityStatus,
    LeaseStatus,
    LlmBatchRequestState,
    LlmBatchState,
    QuestionStatus,
    SnapshotStatus,
    SnapshotTargetStatus,
    Stage,
)
from storage.figure_cache import FigureCacheEntry  # the tables in their own modules, registered here
from storage.incontext_open_judgement_table import InContextOpenJudgement
from storage.incontext_open_table import InContextOpenAnswer
from storage.llm_tables import LlmBatch, LlmBatchRequest, LlmCall
from storage.open_judgement_table import OpenJudgement
from storage.open_result_table import OpenResult
from storage.pack_tables import ResultPack, SubmittedPack
from storage.publish_tables import PublishRevision, PublishTask
from storage.types import UTCDateTime

__all__ = [
    "DaemonLock",
    "Document",
    "Entity",
    "EntityStatus",
    "Event",
    "FigureCacheEntry",
    "GpuEngineStatus",
    "GpuJob",
    "InContextAnswer",
    "InContextOpenAnswer",
    "InContextOpenJudgement",
    "LeaseStatus",
    "LlmBatch",
    "LlmBatchRequest",
    "LlmBatchRequestState",
    "LlmBatchState",
    "LlmCall",
    "OpenJudgement",
    "OpenResult",
    "Probe",
    "PublishRevision",
    "PublishTask",
    "Question",
    "QuestionResult",
    "QuestionStatus",
    "ResultPack",
    "Retraction",
    "SkipCount",
    "Snapshot",
    "SnapshotEntity",
    "SnapshotExclusion",
    "SnapshotItem",
    "SnapshotReport",
    "SnapshotStatus",
    "SnapshotTarget",
    "SnapshotTargetStatus",
    "SourceCursor",
    "Stage",
    "SubmittedPack",
    "TargetModel",
    "Task",
    "Translation",
    "Verification",
]


class Entity(SQLModel, table=True):
    __tablename__ = "entity"
    __table_args__ = (
        UniqueConstraint("source", "external_id", name="uq_entity_source_external"),
        Index("ix_entity_domain_occurred", "domain", "occurred_at"),
        Index("ix_entity_status_occurred", "status", "occurred_at"),
        Index("ix_entity_occurred", "occurred_at", "id"),  # the status pages' entity table, newest first
    )

    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(max_length=64)
    external_id: str = Field(max_length=128)
    domain: str = Field(max_length=32)
    name: str
    occurred_at: datetime = Field(sa_type=UTCDateTime)
    payload: dict[str, Any] = _json()
    facts: dict[str, Any] = _json()
    content_hash: str = Field(max_length=64)
    status: EntityStatus = Field(default=EntityStatus.discovered, max_length=16)
    status_reason: str | None = None
    redated_from: datetime | None = _ts_opt()
    discovered_at: datetime = _ts()
    updated_at: datetime = _ts()


class Document(SQLModel, table=True):
    """The canonical source document of an entity (origin=source) and its translations."""

    __tablename__ = "document"
    __table_args__ = (UniqueConstraint("entity_id", "lang", name="uq_document_entity_lang"),)

    id: int | None = Field(default=None, primary_key=True)
    entity_id: int = Field(foreign_key="entity.id", index=True, ondelete="CASCADE")
    lang: str = Field(max_length=8)
    origin: str = Field(max_length=16)  # "source" | "translation" | "template"
    text: str
    text_hash: str = Field(max_length=64)
    producer: str = Field(default="renderer", max_length=128)  # renderer / template / model id
    prompt_version: str | None = Field(default=None, max_length=32)
    content_hash: str = Field(max_length=64)  # of the entity payload it was rendered from
    created_at: datetime = _ts()


class Task(SQLModel, table=True):
    """One unit of stage work, claimed with a lease. Unique per (stage, entity, key)."""

    __tablename__ = "task"
    __table_args__ = (
        UniqueConstraint("stage", "entity_id", "key", name="uq_task_stage_entity_key"),
        Index("ix_task_claim", "stage", "status", "not_before"),
    )

    id: int | None = Field(default=None, primary_key=True)
    stage: Stage = Field(max_length=16)
    entity_id: int = Field(foreign_key="entity.id", index=True, ondelete="CASCADE")
    key: str = Field(default="", max_length=128)  # e.g. target model, language, question id
    status: LeaseStatus = Field(default=LeaseStatus.pending, max_length=16)
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _ts_opt()
    attempts: int = 0
    max_attempts: int = 5
    not_before: datetime = _ts()
    last_error: str | None = None
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Probe(SQLModel, table=True):
    __tablename__ = "probe"
    __table_args__ = (
        UniqueConstraint("entity_id", "target_model", "lang", name="uq_probe_entity_model_lang"),
    )

    id: int | None = Field(default=None, primary_key=True)
    entity_id: int = Field(foreign_key="entity.id", index=True, ondelete="CASCADE")
    target_model: str = Field(max_length=256)
    lang: str = Field(max_length=8)
    prompt: str
    response: str
    known: bool
    matched_facts: list[str] = _json(list)
    reason: str = ""
    judge: str = Field(max_length=256)  # judge model id or "fact-matcher"
    prompt_version: str = Field(max_length=32)
    created_at: datetime = _ts()


class Question(SQLModel, table=True):
    """A grounded MCQ in the entity's source language (options in generation order)."""

    __tablename__ = "question"
    __table_args__ = (UniqueConstraint("entity_id", "slot", name="uq_question_entity_slot"),)

    id: int | None = Field(default=None, primary_key=True)
    entity_id: int = Field(foreign_key="entity.id", index=True, ondelete="CASCADE")
    slot: str = Field(max_length=64)  # the fact slot (final_score, director, ...)
    lang: str = Field(max_length=8)
    question: str
    options: list[str] = _json(list)
    answer_index: int
    evidence: str
    generator: str = Field(max_length=256)
    prompt_version: str = Field(max_length=32)
    status: QuestionStatus = Field(default=QuestionStatus.generated, max_length=16)
    status_reason: str | None = None
    created_at: datetime = _ts()


class Verification(SQLModel, table=True):
    __tablename__ = "verification"
    __table_args__ = (UniqueConstraint("question_id", "verifier", name="uq_verification_q_verifier"),)

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", index=True, ondelete="CASCADE")
    verifier: str = Field(max_length=256)
    prompt_version: str = Field(max_length=32)
    criteria: dict[str, bool] = _json()
    reasons: dict[str, str] = _json()
    passed: bool
    created_at: datetime = _ts()


class Translation(SQLModel, table=True):
    __tablename__ = "translation"
    __table_args__ = (UniqueConstraint("question_id", "lang", name="uq_translation_q_lang"),)

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", index=True, ondelete="CASCADE")
    lang: str = Field(max_length=8)
    question: str
    options: list[str] = _json(list)
    answer_index: int
    translator: str = Field(max_length=256)
    prompt_version: str = Field(max_length=32)
    checks: dict[str, Any] = _json()
    created_at: datetime = _ts()


class Snapshot(SQLModel, table=True):
    __tablename__ = "snapshot"
    __table_args__ = (
        Index("ix_snapshot_spec_period", "spec", "period"),
        # one frozen snapshot per (spec, period): of two builders freezing the same period, one wins
        Index("uq_snapshot_frozen_period", "spec", "period", unique=True, sqlite_where=text("status = 'frozen'"),
              postgresql_where=text("status = 'frozen'")),
    )

    id: str = Field(primary_key=True, max_length=160)  # <spec>-<YYYY-MM>-<sha256[:12]>
    spec: str = Field(max_length=64)
    period: str = Field(max_length=16)  # YYYY-MM (or the cadence's own label)
    status: SnapshotStatus = Field(default=SnapshotStatus.building, max_length=16)
    content_sha256: str = Field(default="", max_length=64)
    seed: int = 0
    partial: bool = False
    manifest: dict[str, Any] = _json()
    audit: dict[str, Any] = _json()
    export_path: str | None = None
    superseded_by: str | None = Field(default=None, max_length=160)
    built_at: datetime = _ts()


class SnapshotItem(SQLModel, table=True):
    __tablename__ = "snapshot_item"
    __table_args__ = (UniqueConstraint("snapshot_id", "question_id", name="uq_item_snapshot_q"),)

    id: int | None = Field(default=None, primary_key=True)
    snapshot_id: str = Field(foreign_key="snapshot.id", index=True, ondelete="CASCADE")
    question_id: int = Field(foreign_key="question.id", index=True)
    entity_id: int = Field(foreign_key="entity.id", index=True)
    split: str = Field(max_length=8)  # "val" | "test"
    option_order: list[int] = _json(list)  # permutation applied to Question.options
    answer_letter: str = Field(max_length=1)
    # the public ids (clkt.snapshots.ids) of the question and its entity, as in the snapshot's files and the views
    qid: int | None = Field(default=None, sa_type=BigInteger)
    public_entity_id: int | None = Field(default=None, sa_type=BigInteger)


class SnapshotEntity(SQLModel, table=True):
    """Where an entity landed: the one frozen snapshot of a spec that holds it (its primary key makes "exactly one"
    a constraint of the store: a second builder that would place it again fails its freeze). `carried`: the
    snapshot's period is not the entity's own (`own_period`), it joined a later snapshot (`clkt.snapshots.carry`)."""

    __tablename__ = "snapshot_entity"
    __table_args__ = (Index("ix_snapshot_entity_snapshot", "snapshot_id"),)

    spec: str = Field(primary_key=True, max_length=64)
    entity_id: int = Field(primary_key=True, foreign_key="entity.id", ondelete="CASCADE")
    snapshot_id: str = Field(foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    own_period: str = Field(max_length=16)  # the period of the entity's own date, in the snapshot's cadence
    carried: bool = False
    placed_at: datetime = _ts()


class SnapshotReport(SQLModel, table=True):
    """The report last written for a snapshot, and the fingerprint of the finished GPU jobs it was built from."""

    __tablename__ = "snapshot_report"
    __table_args__ = (Index("ix_snapshot_report_written", "written_at"),)

    snapshot_id: str = Field(primary_key=True, foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    fingerprint: str = Field(max_length=64)  # sha256 of the jobs' (id, status, attempts, updated_at)
    jobs: int = 0  # how many jobs (done + failed) it was built from
    path: str  # the report folder (report.md, CSV, JSON, figures)
    written_at: datetime = _ts()


class TargetModel(SQLModel, table=True):
    """Every target model a spec of this store has had. Its name is its identity (probes, exclusions and GPU jobs
    name it), so a name keeps its model for good; a target removed from the config stays, inactive, with its
    results."""

    __tablename__ = "target"

    name: str = Field(primary_key=True, max_length=256)
    model: str = Field(max_length=1024)  # HF id, local path or embedded:<name>
    kind: str = Field(max_length=16)  # base | instruct
    cutoff: date | None = None  # the declared knowledge cutoff (None: the registry's, resolved by the gate)
    active: bool = True  # in the configuration the daemon last started with
    # the first instant an entity is fresh for it (its resolved cutoff + the spec's temporal buffer), as of the
    # last start; what `v_fresh_entities` reads (None: not recorded yet)
    fresh_from: datetime | None = _ts_opt()
    first_seen_at: datetime = _ts()
    last_seen_at: datetime = _ts()


class SnapshotTarget(SQLModel, table=True):
    """Whether a frozen snapshot is valid for a target, and on how many of its entities: `ready` with the
    entities it recognised excluded (`SnapshotExclusion`), `probing` while a target added after the freeze is
    asked about them, `out_of_window` when the snapshot's period is before the target's cutoff + buffer."""

    __tablename__ = "snapshot_target"
    __table_args__ = (Index("ix_snapshot_target_target", "target_name", "status"),)

    snapshot_id: str = Field(primary_key=True, foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    target_name: str = Field(primary_key=True, max_length=256)
    status: SnapshotTargetStatus = Field(max_length=16)
    entities: int = 0  # real entities of the snapshot
    excluded: int = 0  # of them, recognised by the target
    updated_at: datetime = _ts()


class SnapshotExclusion(SQLModel, table=True):
    """An entity of a frozen snapshot that a target (added after the freeze) recognised: left out of that
    target's jobs and results for that snapshot. The snapshot's files never change."""

    __tablename__ = "snapshot_exclusion"

    snapshot_id: str = Field(primary_key=True, foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    target_name: str = Field(primary_key=True, max_length=256)
    entity_id: int = Field(primary_key=True, foreign_key="entity.id")
    reason: str = Field(default="", max_length=500)
    probed_at: datetime = _ts()


class GpuJob(SQLModel, table=True):
    """One (snapshot, model, strategy, train language, seed) injection + evaluation job, lease-claimed."""

    __tablename__ = "gpu_job"
    __table_args__ = (
        UniqueConstraint(
            "snapshot_id", "target_model", "strategy", "train_lang", "seed", name="uq_gpujob_identity"
        ),
        Index("ix_gpujob_claim", "status", "not_before"),
    )

    id: int | None = Field(default=None, primary_key=True)
    snapshot_id: str = Field(foreign_key="snapshot.id", index=True)
    target_model: str = Field(max_length=256)
    strategy: str = Field(max_length=32)
    train_lang: str = Field(max_length=8)
    # the training seed of `spec.seeds` (0: the one seed of a spec that names none; every job before seeds)
    seed: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # queued for a target that joined after the snapshot froze (its catch-up, `clkt.roster`): claimed after every
    # job queued at a freeze, so a month's own jobs never wait behind a new target's back catalogue
    catch_up: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    config: dict[str, Any] = _json()  # the serialized job spec (pydantic)
    status: LeaseStatus = Field(default=LeaseStatus.pending, max_length=16)
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _ts_opt()
    attempts: int = 0
    max_attempts: int = 3
    not_before: datetime = _ts()
    last_error: str | None = None
    device: str | None = Field(default=None, max_length=32)
    best_epoch: int | None = None
    artifacts_dir: str | None = None
    summary: dict[str, Any] = _json()
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class QuestionResult(SQLModel, table=True):
    __tablename__ = "question_result"
    __table_args__ = (
        UniqueConstraint(
            "job_id", "question_id", "lang", "variant", "scorer", name="uq_result_identity"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="gpu_job.id", index=True, ondelete="CASCADE")
    question_id: int = Field(foreign_key="question.id", index=True)
    lang: str = Field(max_length=8)
    variant: str = Field(max_length=16)  # "base" | "injected"
    scorer: str = Field(max_length=32)  # "generate" | "letter-logprob"
    split: str = Field(max_length=8)
    predicted: str | None = Field(default=None, max_length=1)  # None = unparseable
    correct: bool
    raw: str = ""








class SourceCursor(SQLModel, table=True):
    __tablename__ = "source_cursor"

    source: str = Field(primary_key=True, max_length=64)
    watermark: datetime | None = _ts_opt()
    page: int = 0
    etag: str | None = None
    last_modified: str | None = None
    state: dict[str, Any] = _json()
    updated_at: datetime = _ts()


class SkipCount(SQLModel, table=True):
    """Records skipped by a source or stage, counted by reason (shown by `clkt status`)."""

    __tablename__ = "skip_count"

    source: str = Field(primary_key=True, max_length=64)
    reason: str = Field(primary_key=True, max_length=128)
    count: int = 0
    last_detail: str | None = None
    updated_at: datetime = _ts()


class Event(SQLModel, table=True):
    __tablename__ = "event"

    id: int | None = Field(default=None, primary_key=True)
    ts: datetime = _ts(index=True)
    kind: str = Field(max_length=64, index=True)
    message: str
    data: dict[str, Any] = _json()


class DaemonLock(SQLModel, table=True):
    """Who runs the daemon on this store (the row is informative; the lock itself is a file or an
    advisory lock)."""

    __tablename__ = "daemon_lock"

    name: str = Field(primary_key=True, max_length=64)
    owner: str = Field(max_length=128)
    pid: int
    host: str = Field(max_length=128)
    started_at: datetime = _ts()
    heartbeat_at: datetime = _ts()






class Retraction(SQLModel, table=True):
    """A question of a frozen snapshot withdrawn as wrong (`clkt snapshot retract`): every later publish revision of
    the snapshot and its report leave it out; the frozen folder never changes."""

    __tablename__ = "retraction"

    snapshot_id: str = Field(primary_key=True, foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    qid: int = Field(primary_key=True, sa_type=BigInteger)  # the public qid (as in the snapshot's files; < 2**52)
    question_id: int | None = Field(default=None, foreign_key="question.id")  # this store's row, when known
    reason: str = Field(max_length=2000)
    retracted_at: datetime = _ts()


class GpuEngineStatus(SQLModel, table=True):
    """What the GPU consumer of one process last said about its engine: ready, or why GPU jobs wait (the Ray
    cluster unreachable, no node offering what a job asks for). Read by `clkt status` and the status page."""

    __tablename__ = "gpu_engine_status"

    owner: str = Field(primary_key=True, max_length=128)
    engine: str = Field(max_length=16)
    state: str = Field(max_length=16)
    detail: str = ""
    address: str | None = Field(default=None, max_length=512)
    updated_at: datetime = _ts()




class InContextAnswer(SQLModel, table=True):
    """One answer of the in-context track (`clkt.incontext`): a target asked a snapshot's test question in `lang`
    with the entity's `context_lang` document in the prompt ("" = no document: the no-context floor). Keyed by the
    snapshot's public ids (qid, entity_id), so a rerun skips what is stored (`storage.incontext`)."""

    __tablename__ = "incontext_answer"

    snapshot_id: str = Field(primary_key=True, max_length=160)
    target: str = Field(primary_key=True, max_length=128)
    qid: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    context_lang: str = Field(primary_key=True, max_length=8)
    lang: str = Field(primary_key=True, max_length=8)
    entity_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    status: str = Field(max_length=16)  # answered | unparsed (no letter: wrong) | skipped (the prompt cannot fit)
    # the scorer of the answer: generate (letter parse) or option-loglik-norm (a local base target's headline scorer)
    scorer: str = Field(default="generate", max_length=32, sa_column_kwargs={"server_default": "generate"})
    letter: str | None = Field(default=None, max_length=1)
    correct: bool = False
    truncated: bool = False  # the document was cut to fit the model's context
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    created_at: datetime = _ts()

