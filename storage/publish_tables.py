"""The Hub publishing tables: the publish tasks claimed with a lease (`publish_task`) and the revisions committed
(`publish_revision`).

Their own module (storage/models.py imports them, so the migrations and `SQLModel.metadata` see them); the
repositories are `storage.publish` and `storage.publish_revisions`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage._columns import ts_field as _ts
from storage._columns import ts_opt_field as _ts_opt
from storage.enums import LeaseStatus

__all__ = ["PublishRevision", "PublishTask"]


class PublishTask(SQLModel, table=True):
    """Publishing one snapshot to one Hub repo and branch, claimed with a lease (`storage.claim`). One row per
    (repo, branch, snapshot): asking again puts it back to `pending`; `requested_at` later than the claim sends a
    task that is running back to `pending` when it ends (what was asked meanwhile is published too)."""

    __tablename__ = "publish_task"
    __table_args__ = (
        UniqueConstraint("repo", "branch", "snapshot_id", name="uq_publish_task_target"),
        Index("ix_publish_task_claim", "status", "not_before"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(max_length=200)  # owner/name
    branch: str = Field(max_length=128)
    snapshot_id: str = Field(foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    private: bool = False  # a repo this task creates is private
    reason: str = Field(default="", max_length=64)  # why it was asked: frozen, report, release, retraction, cli
    status: LeaseStatus = Field(default=LeaseStatus.pending, max_length=16)
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _ts_opt()
    attempts: int = 0  # spent on failures that were not the Hub's (a Hub that is down spends none)
    max_attempts: int = 5
    not_before: datetime = _ts()
    last_error: str | None = None
    hub_failures: int = 0  # consecutive tries the Hub did not answer (the backoff's exponent)
    outcome: str | None = None  # what the last try ended with (committed revision n / already on the Hub)
    requested_at: datetime = _ts()
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class PublishRevision(SQLModel, table=True):
    """A publish revision of a snapshot on a Hub repo and branch: one Hub commit. `state_key` hashes what the
    revision was built from (the snapshot, its held/released state, its retractions, its report, what is included):
    the same state is never committed twice."""

    __tablename__ = "publish_revision"
    __table_args__ = (
        UniqueConstraint("repo", "branch", "snapshot_id", "revision", name="uq_publish_revision"),
        Index("ix_publish_revision_target", "repo", "branch", "snapshot_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(max_length=200)
    branch: str = Field(max_length=128)
    snapshot_id: str = Field(foreign_key="snapshot.id", max_length=160, ondelete="CASCADE")
    revision: int  # 1, 2, ... per (repo, branch, snapshot)
    state_key: str = Field(max_length=64)
    commit_oid: str = Field(max_length=64)
    held: bool = False  # its test questions (and, by `publish.hold_documents`, documents) were held back
    retracted: int = 0  # questions left out as retracted
    report_fingerprint: str | None = Field(default=None, max_length=64)  # of the report it holds (None: none yet)
    files: int = 0  # files in the snapshot's folder of the commit
    found_on_hub: bool = False  # recorded from the Hub's history (its commit landed, then the process died)
    committed_at: datetime = _ts()
