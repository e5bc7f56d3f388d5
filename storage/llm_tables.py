"""The LLM calls' tables: the call cache (`llm_call`) and the provider batches (`llm_batch`, `llm_batch_request`).

Their own module (storage/models.py imports them, so the migrations and `SQLModel.metadata` see them); the
repositories are `storage.llm_cache` and `storage.llm_batches`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from storage._columns import json_field as _json
from storage._columns import ts_field as _ts
from storage.enums import LlmBatchRequestState, LlmBatchState

__all__ = ["LlmBatch", "LlmBatchRequest", "LlmCall"]


class LlmCall(SQLModel, table=True):
    """Cache of every LLM call by a hash of (model, settings, prompt version, messages, schema)."""

    __tablename__ = "llm_call"

    key: str = Field(primary_key=True, max_length=64)
    model: str = Field(max_length=256)
    stage: str = Field(max_length=32)
    prompt_version: str = Field(max_length=32)
    output: dict[str, Any] = _json()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    created_at: datetime = _ts()
    cached_input_tokens: int = 0  # part of input_tokens the provider read from its prompt cache
    batch: bool = False  # answered through a provider batch (batch prices)


class LlmBatch(SQLModel, table=True):
    """One provider batch. The row (with `id`, the idempotency key sent as metadata) is stored before the
    submission, the provider's id as soon as it answers: a restart reconciles a pending row by listing the
    provider's batches instead of submitting again."""

    __tablename__ = "llm_batch"

    id: str = Field(primary_key=True, max_length=64)
    model: str = Field(max_length=256)
    provider: str = Field(max_length=32)  # openai | anthropic
    state: LlmBatchState = Field(default=LlmBatchState.pending, max_length=16)
    provider_batch_id: str | None = Field(default=None, max_length=128)
    input_file_id: str | None = Field(default=None, max_length=128)
    provider_status: str | None = Field(default=None, max_length=32)
    request_count: int = 0
    polls: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()

    __table_args__ = (Index("ix_llm_batch_state", "state"),)


class LlmBatchRequest(SQLModel, table=True):
    """One LLM call waiting for (or answered by) a provider batch, keyed by its call-cache key."""

    __tablename__ = "llm_batch_request"

    key: str = Field(primary_key=True, max_length=64)
    model: str = Field(max_length=256)
    stage: str = Field(max_length=32)
    group: str = Field(max_length=1024)  # requests of one group share a batch (endpoint, model)
    body: str  # the provider-native request as JSON
    state: LlmBatchRequestState = Field(default=LlmBatchRequestState.queued, max_length=16)
    batch_id: str | None = Field(default=None, max_length=64)
    result_status: str | None = Field(default=None, max_length=16)
    result_body: str | None = None
    tries: int = 0  # batches it was sent in (expired / cancelled ones are sent again)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()

    __table_args__ = (
        Index("ix_llm_batch_request_state", "state", "model"),
        Index("ix_llm_batch_request_batch", "batch_id"),
    )
