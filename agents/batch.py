"""Batch mode: an agent's calls go through the provider's batch API (OpenAI Batch, Anthropic Message Batches)
at batch prices, survive a kill -9 at any moment, and are never submitted twice.

How a call travels:
1. `BatchedModel.request()` (under `CachedModel`, instead of the rate-limited online model) encodes the request
   with pydantic-ai's own `batch_encode` (the same parameters the online call would send) and stores it,
   keyed by its call-cache key, as a queued `BatchRequestRecord`; then it raises `BatchPending`, a
   `RetryLater`: the stage task is released and claimed again later. Nothing waits in memory.
2. `BatchDispatcher.tick()` (the daemon's `llm-batches` service) collects queued requests of one model into a
   batch once `max_requests` are waiting or the oldest has waited `flush_after_s`. It stores the batch row
   (our id, the idempotency key) and assigns the requests to it in one transaction *before* anything is
   sent; then uploads (OpenAI: the input file, whose id is stored), creates the batch with our id in its
   metadata, and stores the provider's id.
3. A restart finds a `pending` batch row (killed somewhere in step 2): it lists the provider's batches and
   adopts the one carrying our id (OpenAI metadata; Anthropic has no metadata: the batch created after our
   row with the same request count that no other row holds, checked against the result ids when it ends);
   only when none exists is it submitted. A `submitted` row is simply polled again.
4. When the batch ends, every result is stored on its request (`done`); requests the provider did not run
   (expired, cancelled) go back to the queue for the next batch, up to `max_tries`.
5. The stage task runs again: earlier calls answer from the call cache, this one finds its result, and
   pydantic-ai's `batch_decode` turns it into the `ModelResponse` the online call would have returned; the
   agent validates it with the same output type and validators. A result that fails validation makes the
   agent ask again (a longer conversation, a new key): that repair goes into the next batch.

`agents/` knows no SQL: the store implements `BatchStore` (`storage.llm_batches.SqlBatchStore`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal, Protocol, get_args

import anthropic
import openai
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.batch import Batch, BatchRequest, BatchResult, BatchResultStatus
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from agents.cache import call_key
from clkt.calls import BatchRecord, BatchRequestRecord
from clkt.errors import AgentError, ConfigError, RetryLater, UserError

__all__ = [
    "BatchDispatcher",
    "BatchPending",
    "BatchRecord",
    "BatchRequestRecord",
    "BatchStats",
    "BatchStore",
    "BatchedModel",
    "ProviderKind",
]

log = logging.getLogger(__name__)

ProviderKind = Literal["openai", "anthropic"]
# a stored request's result status as pydantic-ai's (the store keeps what `close_batch` was given: one of these)
_RESULT_STATUS: dict[str | None, BatchResultStatus] = {s: s for s in get_args(BatchResultStatus)}


def _sdk_client(model: Model) -> Any:
    """The provider SDK client a batch goes through (the model is one of `agents.factory`'s batch models). The
    batch APIs are used through the SDK directly, so the client is untyped here."""
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

    if isinstance(model, AnthropicModel | OpenAIResponsesModel | OpenAIChatModel):
        return model.client
    raise UserError(f"{model.model_name}: not an OpenAI or Anthropic model, it has no batch API client")
_OPENAI_ENDPOINT = "/v1/responses"
_METADATA_KEY = "clkt_batch"


class BatchPending(RetryLater):
    """The call is queued for, or waiting in, a provider batch: release the task and come back later."""






class BatchStore(Protocol):
    async def get_request(self, key: str) -> BatchRequestRecord | None: ...

    async def enqueue(self, rec: BatchRequestRecord) -> None:
        """Insert a queued request; a key already there is kept as it is."""
        ...

    async def forget_request(self, key: str) -> None:
        """Drop a request whose (errored) result was handed to its caller, so a retry queues it again."""
        ...

    async def queued_models(self) -> dict[str, tuple[int, datetime]]:
        """model -> (queued requests, creation time of the oldest)."""
        ...

    async def open_batch(
        self, *, batch_id: str, model: str, provider: str, limit: int
    ) -> list[BatchRequestRecord]:
        """In one transaction: store a pending batch and move up to `limit` queued requests of `model` into it."""
        ...

    async def batch_requests(self, batch_id: str) -> list[BatchRequestRecord]: ...

    async def update_batch(self, batch_id: str, **fields: Any) -> None: ...

    async def open_batches(self) -> list[BatchRecord]:
        """Batches not yet ended (pending or submitted), oldest first."""
        ...

    async def adopted_provider_ids(self) -> set[str]: ...

    async def close_batch(
        self, batch_id: str, *, results: dict[str, tuple[str, str | None]], requeue: Sequence[str],
        fail: dict[str, str], provider_status: str,
    ) -> None:
        """In one transaction: results onto their requests, `requeue` back to the queue, `fail` done with an
        error body, the batch ended."""
        ...

    async def prune_answered(self) -> int:
        """Drop answered requests whose answer is in the call cache (the cache keeps it from now on)."""
        ...


@dataclass
class BatchStats:
    submitted_batches: int = 0
    adopted_batches: int = 0  # found at the provider after a restart instead of submitted again
    submitted_requests: int = 0
    requeued: int = 0
    results: int = 0


def _now() -> datetime:
    return datetime.now(UTC)


class BatchedModel(WrapperModel):
    """Sends each request through the provider's batch API (see the module doc): a stored result or
    `BatchPending`."""

    POLL_DEFER_S: ClassVar[float] = 30.0  # how long a waiting stage task stays released (default)

    def __init__(
        self, wrapped: Model, *, store: BatchStore, model: str, stage: str, prompt_version: str,
        defer_s: float | None = None,
    ) -> None:
        super().__init__(wrapped)
        if wrapped.batch_max_requests is None:
            raise ConfigError("agents.mode", f"{model!r} has no batch API: use mode = 'online' for it")
        self.store = store
        self.model_label = model
        self.stage = stage
        self.prompt_version = prompt_version
        self.defer_s = defer_s

    def _defer(self) -> timedelta:
        return timedelta(seconds=self.defer_s if self.defer_s is not None else self.POLL_DEFER_S)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        key = call_key(
            model=self.model_label, prompt_version=self.prompt_version, messages=messages,
            model_settings=model_settings, params=model_request_parameters,
        )
        req = BatchRequest(
            custom_id=key, messages=messages, model_settings=model_settings,
            model_request_parameters=model_request_parameters,
        )
        rec = await self.store.get_request(key)
        if rec is None:
            encoded = await self.wrapped.batch_encode(req)
            await self.store.enqueue(BatchRequestRecord(
                key=key, model=self.model_label, stage=self.stage, group=encoded.group, body=encoded.body,
            ))
            raise BatchPending(f"{self.stage}: queued for the next {self.model_label} batch", defer=self._defer())
        if rec.state != "done":
            raise BatchPending(f"{self.stage}: waiting for {self.model_label} batch {rec.batch_id or '(next)'}",
                               defer=self._defer())
        if rec.result_status == "refused":  # the provider refused the whole batch (see BatchDispatcher._submit)
            await self.store.forget_request(key)
            raise AgentError(f"{self.stage}: the {self.model_label} batch API refused the batch: {rec.result_body}")
        result = BatchResult(custom_id=key, status=_RESULT_STATUS.get(rec.result_status, "errored"),
                             body=rec.result_body)
        try:
            return self.wrapped.batch_decode(result, req)
        except Exception:
            await self.store.forget_request(key)  # the error reaches the task; its retry queues the call again
            raise


@dataclass(kw_only=True)
class _Entry:
    model: Model
    provider: ProviderKind


@dataclass(kw_only=True)
class BatchDispatcher:
    """Collects queued requests into provider batches, reconciles, polls and collects them."""

    store: BatchStore
    max_requests: int = 1000
    flush_after_s: float = 60.0
    poll_interval_s: float = 30.0
    max_tries: int = 3  # batches a request may expire or be cancelled in before it fails
    reconcile_window_s: float = 120.0  # clock skew allowed between our batch row and the provider's batch
    models: dict[str, _Entry] = field(default_factory=dict)
    stats: BatchStats = field(default_factory=BatchStats)
    _last_poll: dict[str, float] = field(default_factory=dict)
    _ticks: int = 0

    PRUNE_EVERY: ClassVar[int] = 30  # ticks between prunings of answered requests

    def register(self, label: str, model: Model, provider: ProviderKind) -> None:
        self.models.setdefault(label, _Entry(model=model, provider=provider))

    async def tick(self, *, force_flush: bool = False) -> None:
        """One round: reconcile or poll every open batch, then submit what is due."""
        self._ticks += 1
        if self._ticks % self.PRUNE_EVERY == 0:
            await self.store.prune_answered()
        for b in await self.store.open_batches():
            entry = self.models.get(b.model)
            if entry is None:
                continue  # a model this process does not serve (config changed): left for one that does
            if b.state == "pending":
                await self._submit_or_adopt(b, entry)
            else:
                await self._poll(b, entry)
        now = _now()
        for label, (n, oldest) in (await self.store.queued_models()).items():
            entry = self.models.get(label)
            if entry is None:
                continue
            due = force_flush or n >= self.max_requests or (now - oldest).total_seconds() >= self.flush_after_s
            if due:
                batch_id = uuid.uuid4().hex
                reqs = await self.store.open_batch(batch_id=batch_id, model=label, provider=entry.provider,
                                                   limit=self.max_requests)
                if reqs:
                    rec = BatchRecord(id=batch_id, model=label, provider=entry.provider, state="pending",
                                      request_count=len(reqs), created_at=_now())
                    await self._submit(rec, entry, reqs)

    # -- submission ---------------------------------------------------------------------------------
    async def _submit_or_adopt(self, b: BatchRecord, entry: _Entry) -> None:
        found = await self._find(b, entry)
        if found is not None:
            self.stats.adopted_batches += 1
            log.info("batch %s: adopted provider batch %s after a restart", b.id, found)
            await self.store.update_batch(b.id, state="submitted", provider_batch_id=found)
            return
        await self._submit(b, entry, await self.store.batch_requests(b.id))

    async def _find(self, b: BatchRecord, entry: _Entry) -> str | None:
        client = _sdk_client(entry.model)
        since = (b.created_at or _now()) - timedelta(seconds=self.reconcile_window_s)
        if entry.provider == "openai":
            async for ob in client.batches.list(limit=100):  # newest first: stop before our row existed
                if (ob.metadata or {}).get(_METADATA_KEY) == b.id:
                    return str(ob.id)
                if ob.created_at < since.timestamp():
                    break
            return None
        taken = await self.store.adopted_provider_ids()
        candidates = []
        async for ab in client.beta.messages.batches.list(limit=100):
            if ab.created_at < since:
                break
            c = ab.request_counts
            total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
            if ab.id not in taken and ab.created_at >= since and total == b.request_count:
                candidates.append(ab)
        candidates.sort(key=lambda ab: ab.created_at)
        return str(candidates[0].id) if candidates else None

    async def _submit(self, b: BatchRecord, entry: _Entry, reqs: list[BatchRequestRecord]) -> None:
        if not reqs:
            await self.store.update_batch(b.id, state="ended", provider_status="empty")
            return
        try:
            await self._send(b, entry, reqs)
        except (openai.APIStatusError, anthropic.APIStatusError) as e:
            if not 400 <= e.status_code < 500 or e.status_code in (408, 409, 429):
                raise  # the service retries later; the batch row stays pending and is reconciled first
            # the provider refused the batch itself (bad request, auth): its callers get the reason, no retry loop
            reason = json.dumps({"status": e.status_code, "message": str(e.message)[:500]})
            await self.store.close_batch(b.id, results={r.key: ("refused", reason) for r in reqs}, requeue=[],
                                         fail={}, provider_status=f"refused {e.status_code}")
            log.error("batch %s: the provider refused it (%s): %s", b.id, e.status_code, str(e.message)[:200])

    async def _send(self, b: BatchRecord, entry: _Entry, reqs: list[BatchRequestRecord]) -> None:
        client = _sdk_client(entry.model)
        if entry.provider == "openai":
            file_id = b.input_file_id
            if file_id is None:
                lines = "\n".join(
                    json.dumps({"custom_id": r.key, "method": "POST", "url": _OPENAI_ENDPOINT,
                                "body": json.loads(r.body)}, ensure_ascii=False, separators=(",", ":"))
                    for r in reqs
                )
                f = await client.with_options(max_retries=0).files.create(
                    file=(f"clkt-{b.id}.jsonl", lines.encode("utf-8")), purpose="batch"
                )
                file_id = f.id
                await self.store.update_batch(b.id, input_file_id=file_id)
            ob = await client.with_options(max_retries=0).batches.create(
                input_file_id=file_id, endpoint=_OPENAI_ENDPOINT, completion_window="24h",
                metadata={_METADATA_KEY: b.id},
            )
            pid, status = str(ob.id), str(ob.status)
        else:
            betas = json.loads(reqs[0].group).get("betas") or []
            kw: dict[str, Any] = {"betas": betas} if betas else {}
            ab = await client.with_options(max_retries=0).beta.messages.batches.create(
                requests=[{"custom_id": r.key, "params": json.loads(r.body)} for r in reqs], **kw
            )
            pid, status = str(ab.id), str(ab.processing_status)
        await self.store.update_batch(b.id, state="submitted", provider_batch_id=pid, provider_status=status)
        self.stats.submitted_batches += 1
        self.stats.submitted_requests += len(reqs)
        log.info("batch %s: submitted %d %s requests as %s", b.id, len(reqs), b.model, pid)

    # -- polling and collection ----------------------------------------------------------------------
    async def _poll(self, b: BatchRecord, entry: _Entry) -> None:
        assert b.provider_batch_id is not None
        now = time.monotonic()
        if now - self._last_poll.get(b.id, -1e18) < self.poll_interval_s:
            return
        self._last_poll[b.id] = now
        reqs = await self.store.batch_requests(b.id)
        group = reqs[0].group if reqs else "{}"
        handle = Batch(id=b.provider_batch_id, model_name=entry.model.model_name, provider_name=entry.model.system,
                       group=group, status="in_progress", created_at=b.created_at or _now(),
                       request_count=b.request_count)
        handle = await entry.model.batch_status(handle)
        status = str((handle.provider_details or {}).get("status") or handle.status)
        await self.store.update_batch(b.id, polls=b.polls + 1, provider_status=status)
        if handle.status != "ended":
            return
        results = {r.custom_id: r for r in await entry.model.batch_results(handle)}
        done: dict[str, tuple[str, str | None]] = {}
        requeue: list[str] = []
        fail: dict[str, str] = {}
        for r in reqs:
            res = results.get(r.key)
            if res is not None and res.status in ("succeeded", "errored"):
                done[r.key] = (res.status, res.body)
            elif r.tries + 1 < self.max_tries:
                requeue.append(r.key)  # expired, cancelled or missing: the next batch takes it
            else:
                fail[r.key] = res.status if res is not None else "expired"
        await self.store.close_batch(b.id, results=done, requeue=requeue, fail=fail, provider_status=status)
        self.stats.results += len(done)
        self.stats.requeued += len(requeue)
        self._last_poll.pop(b.id, None)
        log.info("batch %s (%s) ended %s: %d results, %d queued again, %d failed", b.id, b.provider_batch_id,
                 status, len(done), len(requeue), len(fail))
