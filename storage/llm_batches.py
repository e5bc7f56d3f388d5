"""The store side of batch mode (`agents.batch.BatchStore`): queued calls and provider batches.

Every write is its own short transaction, committed before the next provider round trip: the batch row and
its requests before submission, the input file id after the upload, the provider's batch id after the
create call, the results and the requeued requests together when the batch ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.calls import BatchRecord, BatchRequestRecord
from storage.engine import Store
from storage.models import LlmBatch, LlmBatchRequest, LlmBatchRequestState, LlmBatchState, LlmCall
from storage.tasks import insert_ignore
from storage.types import affected_rows, utcnow

__all__ = ["SqlBatchStore"]


def _req(row: LlmBatchRequest) -> BatchRequestRecord:
    return BatchRequestRecord(
        key=row.key, model=row.model, stage=row.stage, group=row.group, body=row.body, state=row.state.value,
        batch_id=row.batch_id, result_status=row.result_status, result_body=row.result_body, tries=row.tries,
        created_at=row.created_at,
    )


def _batch(row: LlmBatch) -> BatchRecord:
    return BatchRecord(
        id=row.id, model=row.model, provider=row.provider, state=row.state.value,
        provider_batch_id=row.provider_batch_id, input_file_id=row.input_file_id, provider_status=row.provider_status,
        request_count=row.request_count, polls=row.polls, created_at=row.created_at,
    )


class SqlBatchStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def get_request(self, key: str) -> BatchRequestRecord | None:
        async with self.store.session() as s:
            row = await s.get(LlmBatchRequest, key)
        return _req(row) if row is not None else None

    async def enqueue(self, rec: BatchRequestRecord) -> None:
        now = utcnow()
        row = dict(key=rec.key, model=rec.model, stage=rec.stage, group=rec.group, body=rec.body,
                   state=LlmBatchRequestState.queued, tries=0, created_at=now, updated_at=now)
        await self.store.run_with_retry(lambda s: insert_ignore(s, LlmBatchRequest, [row]))

    async def forget_request(self, key: str) -> None:
        async def delete_request(s: AsyncSession) -> None:
            row = await s.get(LlmBatchRequest, key)
            if row is not None and row.state is LlmBatchRequestState.done:
                await s.delete(row)

        await self.store.run_with_retry(delete_request)

    async def queued_models(self) -> dict[str, tuple[int, datetime]]:
        async with self.store.session() as s:
            rows = (
                await s.execute(
                    select(col(LlmBatchRequest.model), func.count(), func.min(col(LlmBatchRequest.created_at)))
                    .where(col(LlmBatchRequest.state) == LlmBatchRequestState.queued)
                    .group_by(col(LlmBatchRequest.model))
                )
            ).all()
        out: dict[str, tuple[int, datetime]] = {}
        for model, n, oldest in rows:
            if isinstance(oldest, str):  # SQLite's MIN() over the column returns the stored text
                oldest = datetime.fromisoformat(oldest)
            out[model] = (int(n), oldest)
        return out

    async def open_batch(self, *, batch_id: str, model: str, provider: str, limit: int) -> list[BatchRequestRecord]:
        async def take_queued(s: AsyncSession) -> list[BatchRequestRecord]:
            keys = (
                await s.execute(
                    select(col(LlmBatchRequest.key))
                    .where(col(LlmBatchRequest.state) == LlmBatchRequestState.queued, col(LlmBatchRequest.model) == model)
                    .order_by(col(LlmBatchRequest.created_at)).limit(limit)
                )
            ).scalars().all()
            if not keys:
                return []
            now = utcnow()
            s.add(LlmBatch(id=batch_id, model=model, provider=provider, state=LlmBatchState.pending,
                           request_count=len(keys), created_at=now, updated_at=now))
            await s.execute(
                update(LlmBatchRequest)
                .where(col(LlmBatchRequest.key).in_(keys), col(LlmBatchRequest.state) == LlmBatchRequestState.queued)
                .values(state=LlmBatchRequestState.submitted, batch_id=batch_id, updated_at=now)
                .execution_options(synchronize_session=False)
            )
            rows = (await s.execute(select(LlmBatchRequest).where(col(LlmBatchRequest.batch_id) == batch_id))).scalars()
            return [_req(r) for r in rows]

        return await self.store.run_with_retry(take_queued)

    async def batch_requests(self, batch_id: str) -> list[BatchRequestRecord]:
        async with self.store.session() as s:
            rows = (
                await s.execute(
                    select(LlmBatchRequest).where(col(LlmBatchRequest.batch_id) == batch_id).order_by(col(LlmBatchRequest.key))
                )
            ).scalars().all()
        return [_req(r) for r in rows]

    async def update_batch(self, batch_id: str, **fields: Any) -> None:
        if "state" in fields:
            fields["state"] = LlmBatchState(fields["state"])
        fields["updated_at"] = utcnow()

        async def write_batch(s: AsyncSession) -> None:
            await s.execute(update(LlmBatch).where(col(LlmBatch.id) == batch_id).values(**fields))

        await self.store.run_with_retry(write_batch)

    async def open_batches(self) -> list[BatchRecord]:
        async with self.store.session() as s:
            rows = (
                await s.execute(
                    select(LlmBatch).where(col(LlmBatch.state) != LlmBatchState.ended).order_by(col(LlmBatch.created_at))
                )
            ).scalars().all()
        return [_batch(r) for r in rows]

    async def adopted_provider_ids(self) -> set[str]:
        async with self.store.session() as s:
            ids = (
                await s.execute(select(col(LlmBatch.provider_batch_id)).where(col(LlmBatch.provider_batch_id).is_not(None)))
            ).scalars().all()
        return {i for i in ids if i}

    async def close_batch(
        self, batch_id: str, *, results: dict[str, tuple[str, str | None]], requeue: Sequence[str],
        fail: dict[str, str], provider_status: str,
    ) -> None:
        async def write_results(s: AsyncSession) -> None:
            now = utcnow()
            for key, (status, body) in results.items():
                await s.execute(
                    update(LlmBatchRequest).where(col(LlmBatchRequest.key) == key, col(LlmBatchRequest.batch_id) == batch_id)
                    .values(state=LlmBatchRequestState.done, result_status=status, result_body=body, updated_at=now)
                )
            for key, status in fail.items():
                await s.execute(
                    update(LlmBatchRequest).where(col(LlmBatchRequest.key) == key, col(LlmBatchRequest.batch_id) == batch_id)
                    .values(state=LlmBatchRequestState.done, result_status=status, result_body=None,
                            tries=col(LlmBatchRequest.tries) + 1, updated_at=now)
                )
            if requeue:
                await s.execute(
                    update(LlmBatchRequest)
                    .where(col(LlmBatchRequest.key).in_(list(requeue)), col(LlmBatchRequest.batch_id) == batch_id)
                    .values(state=LlmBatchRequestState.queued, batch_id=None, tries=col(LlmBatchRequest.tries) + 1,
                            created_at=now, updated_at=now)
                    .execution_options(synchronize_session=False)
                )
            await s.execute(
                update(LlmBatch).where(col(LlmBatch.id) == batch_id)
                .values(state=LlmBatchState.ended, provider_status=provider_status, updated_at=now)
            )

        await self.store.run_with_retry(write_results)

    async def prune_answered(self) -> int:
        async def delete_answered(s: AsyncSession) -> int:
            res = await s.execute(
                delete(LlmBatchRequest).where(
                    col(LlmBatchRequest.state) == LlmBatchRequestState.done,
                    col(LlmBatchRequest.key).in_(select(col(LlmCall.key))),
                ).execution_options(synchronize_session=False)
            )
            return affected_rows(res)

        return await self.store.run_with_retry(delete_answered)
