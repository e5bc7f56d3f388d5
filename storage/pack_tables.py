"""The result packs' tables: a finished job's answers packed for the leaderboard (`result_pack`) and the packs made
elsewhere and submitted (`submitted_pack`).

Their own module (storage/models.py imports them, so the migrations and `SQLModel.metadata` see them); the
repositories are `storage.result_packs` and `storage.submissions`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Column, LargeBinary
from sqlmodel import Field, SQLModel

from storage._columns import json_field as _json
from storage._columns import ts_field as _ts
from storage._columns import ts_opt_field as _ts_opt
from storage.types import JSONType

__all__ = ["ResultPack", "SubmittedPack"]


class ResultPack(SQLModel, table=True):
    """A finished job's test-split answers of one scorer, packed for reading many snapshots at once (the
    leaderboard, `storage.result_packs`): per question (ascending id) its entity and one 64-bit word of flags,
    four 16-bit fields over the positions of `langs` (injected answered, injected correct, base answered, base
    correct). Derived from `question_result`, written in the same transaction by `write_job_results`."""

    __tablename__ = "result_pack"

    job_id: int = Field(primary_key=True, foreign_key="gpu_job.id", ondelete="CASCADE")
    scorer: str = Field(primary_key=True, max_length=32)
    langs: str = Field(max_length=200)  # comma-separated; a language's position is its bit in each field
    questions: int = 0
    question_ids: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # little-endian int64 each
    entity_ids: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # little-endian int64 each
    flags: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # little-endian uint64 each
    created_at: datetime = _ts()


class SubmittedPack(SQLModel, table=True):
    """A result pack made elsewhere by `clkt evaluate` and taken in by `clkt submit` (`storage.submissions`), once
    verified against its snapshot: keyed by the pack's sha256 (the sha256 of its manifest.json), so the same pack
    submitted twice is one row. `metrics` are the ones recomputed here from its predictions (the pack's own claims
    are never stored); `answers` is its predictions.jsonl, gzip'd, as submitted."""

    __tablename__ = "submitted_pack"

    pack_sha256: str = Field(primary_key=True, max_length=64)
    snapshot_id: str = Field(foreign_key="snapshot.id", index=True, max_length=160, ondelete="CASCADE")
    target_name: str = Field(max_length=128)
    model: str = Field(max_length=512)  # as given to `clkt evaluate`: a local path, a Hub id, embedded:<name>
    model_revision: str | None = Field(default=None, max_length=128)
    weights_sha256: str | None = Field(default=None, max_length=64)
    kind: str = Field(max_length=16)
    cutoff: date
    strategy: str = Field(max_length=64)
    train_langs: list[str] = _json(list)
    scorers: list[str] = _json(list)
    format_version: int
    clkt_version: str = Field(max_length=32)
    predictions: int = 0
    claims_match: bool = True  # the pack's metrics.json agreed with the metrics recomputed here
    claims_note: str = ""  # where they first differed
    metrics: dict[str, Any] = _json()
    manifest: dict[str, Any] = _json()
    answers: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    # its open_answers.jsonl as scored here (`clkt.packs.open_answers.encode_scored`), None: no open track
    open_answers: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    submitted_at: datetime = _ts()
    # `clkt submit --reproduce`'s latest re-run (clkt.report.leaderboard_data.Reproduction), None until one ran
    reproduction: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONType, nullable=True))
    reproduced_at: datetime | None = _ts_opt()  # when it was stored (the leaderboard's fingerprint reads it)
