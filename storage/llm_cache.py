"""The store side of the LLM call cache (`agents.cache.CallCache`) and the cost figures of `clkt status`.

Cache writes run in their own short transaction, outside the stage's: a paid call is recorded the moment it
returns, so a crash of the stage afterwards never pays for it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, computed_field
from sqlalchemy import case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.calls import CachedCall, month_start, retired_key
from storage.engine import Store
from storage.models import LlmCall, Question, QuestionStatus
from storage.tasks import insert_ignore
from storage.types import utcnow

__all__ = ["CostSummary", "SqlCallCache", "StageCost", "cost_summary"]


class SqlCallCache:
    """`CallCache` on the `llm_call` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> CachedCall | None:
        async with self.store.session() as s:
            row = await s.get(LlmCall, key)
        if row is None:
            return None
        return CachedCall(
            key=row.key, model=row.model, stage=row.stage, prompt_version=row.prompt_version,
            response=row.output, input_tokens=row.input_tokens, output_tokens=row.output_tokens,
            cost_usd=row.cost_usd, latency_ms=row.latency_ms, cached_input_tokens=row.cached_input_tokens,
            batch=row.batch,
        )

    async def put(self, call: CachedCall) -> None:
        row = dict(
            key=call.key, model=call.model, stage=call.stage, prompt_version=call.prompt_version,
            output=call.response, input_tokens=call.input_tokens, output_tokens=call.output_tokens,
            cost_usd=call.cost_usd, latency_ms=call.latency_ms, created_at=utcnow(),
            cached_input_tokens=call.cached_input_tokens, batch=call.batch,
        )
        await self.store.run_with_retry(lambda s: insert_ignore(s, LlmCall, [row]))

    async def retire(self, keys: Sequence[str]) -> None:
        """Move each call of `keys` to a `retired_key` (its cost still counted, never replayed), in one transaction."""
        async def move(s: AsyncSession) -> None:
            for key in dict.fromkeys(keys):
                await s.execute(update(LlmCall).where(col(LlmCall.key) == key).values(key=retired_key(key)))

        await self.store.run_with_retry(move)

    async def spent_usd(self, *, since: datetime) -> float:
        async with self.store.session() as s:
            total = (await s.execute(select(func.sum(col(LlmCall.cost_usd))).where(col(LlmCall.created_at) >= since))).scalar()
        return float(total or 0.0)


class StageCost(BaseModel):
    """The paid calls of one stage with one model."""

    stage: str
    model: str = ""
    calls: int
    input_tokens: int  # cached ones included
    cached_input_tokens: int = 0
    output_tokens: int
    cost_usd: float
    mean_latency_ms: float
    batch_calls: int = 0

    @computed_field  # type: ignore[prop-decorator]  # mypy refuses a decorator over @property; pydantic documents it
    @property
    def batch_share(self) -> float:
        return self.batch_calls / self.calls if self.calls else 0.0


class CostSummary(BaseModel):
    """LLM spend for `clkt status`: per stage, per accepted question, and this month against the budget."""

    stages: list[StageCost]  # per stage and model
    calls: int
    input_tokens: int
    cached_input_tokens: int = 0
    batch_calls: int = 0
    output_tokens: int
    cost_usd: float
    accepted_questions: int
    cost_per_accepted_question_usd: float | None
    tokens_per_accepted_question: float | None
    month_cost_usd: float
    monthly_budget_usd: float | None = None
    budget_exhausted: bool = False


async def cost_summary(
    session: AsyncSession, *, monthly_budget_usd: float | None = None, now: datetime | None = None
) -> CostSummary:
    rows = (
        await session.execute(
            select(
                col(LlmCall.stage),
                col(LlmCall.model),
                func.count(),
                func.coalesce(func.sum(col(LlmCall.input_tokens)), 0),
                func.coalesce(func.sum(col(LlmCall.cached_input_tokens)), 0),
                func.coalesce(func.sum(col(LlmCall.output_tokens)), 0),
                func.coalesce(func.sum(col(LlmCall.cost_usd)), 0.0),
                func.coalesce(func.avg(col(LlmCall.latency_ms)), 0.0),
                func.coalesce(func.sum(case((col(LlmCall.batch), 1), else_=0)), 0),
            ).group_by(col(LlmCall.stage), col(LlmCall.model)).order_by(col(LlmCall.stage), col(LlmCall.model))
        )
    ).all()
    stages = [
        StageCost(stage=st, model=m, calls=int(n), input_tokens=int(i), cached_input_tokens=int(ci),
                  output_tokens=int(o), cost_usd=float(c), mean_latency_ms=float(lat), batch_calls=int(nb))
        for st, m, n, i, ci, o, c, lat, nb in rows
    ]
    accepted = int(
        (await session.execute(select(func.count()).where(col(Question.status) == QuestionStatus.translated))).scalar() or 0
    )
    since = month_start(now or utcnow())
    month = float(
        (await session.execute(select(func.sum(col(LlmCall.cost_usd))).where(col(LlmCall.created_at) >= since))).scalar() or 0.0
    )
    cost = sum(s.cost_usd for s in stages)
    tokens = sum(s.input_tokens + s.output_tokens for s in stages)
    return CostSummary(
        stages=stages,
        calls=sum(s.calls for s in stages),
        input_tokens=sum(s.input_tokens for s in stages),
        cached_input_tokens=sum(s.cached_input_tokens for s in stages),
        batch_calls=sum(s.batch_calls for s in stages),
        output_tokens=sum(s.output_tokens for s in stages),
        cost_usd=cost,
        accepted_questions=accepted,
        cost_per_accepted_question_usd=cost / accepted if accepted else None,
        tokens_per_accepted_question=tokens / accepted if accepted else None,
        month_cost_usd=month,
        monthly_budget_usd=monthly_budget_usd,
        budget_exhausted=monthly_budget_usd is not None and month >= monthly_budget_usd,
    )
