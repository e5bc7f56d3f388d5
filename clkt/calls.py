"""What an LLM call leaves behind: the records `agents/` produces and `storage/` keeps.

Kernel facts, like `clkt.facts`: `agents.cache` and `agents.batch` build and read them, `storage.llm_cache`
and `storage.llm_batches` map them to rows, and neither side imports the other.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["BatchRecord", "BatchRequestRecord", "CachedCall", "month_start", "retired_key"]


def month_start(now: datetime) -> datetime:
    """The first instant of `now`'s month (UTC): where a monthly budget starts."""
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def retired_key(key: str) -> str:
    """A fresh key for a retired call's record (`agents.cache.CachedModel.retire`): no request hashes to it, so the
    call is kept (its cost counts against the budget) but never replayed."""
    return hashlib.sha256(f"retired:{key}:{uuid.uuid4().hex}".encode()).hexdigest()


class CachedCall(BaseModel):
    """One provider call as stored: the response, its usage, cost and latency."""

    key: str = Field(min_length=64, max_length=64)
    model: str
    stage: str
    prompt_version: str
    response: dict[str, Any]  # the ModelResponse as JSON
    input_tokens: int = 0  # all input tokens, cached ones included
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    cached_input_tokens: int = 0
    batch: bool = False


@dataclass(frozen=True, kw_only=True)
class BatchRequestRecord:
    """One request of a provider batch, as kept in the store (queued, submitted, done)."""

    key: str
    model: str
    stage: str
    group: str
    body: str
    state: str = "queued"  # queued | submitted | done
    batch_id: str | None = None
    result_status: str | None = None  # succeeded | errored | expired | canceled
    result_body: str | None = None
    tries: int = 0
    created_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class BatchRecord:
    """One provider batch: our id first (stored before submission), the provider's once known."""

    id: str
    model: str
    provider: str
    state: str  # pending | submitted | ended
    provider_batch_id: str | None = None
    input_file_id: str | None = None
    provider_status: str | None = None
    request_count: int = 0
    polls: int = 0
    created_at: datetime | None = None
