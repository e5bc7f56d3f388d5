"""The LLM call cache, as a model wrapper: a restart or a re-run never pays for the same call twice.

`CachedModel` wraps the (rate-limited) provider model of one agent role. Every request is keyed by a sha256
of (model, settings, prompt version, messages, output schema); a hit replays the stored `ModelResponse`
without touching the provider, a miss is sent, priced from the token usage and stored with its latency.
Pricing (`cost_usd`): the config's `[agents.prices."<model>"]` when given (cached input tokens at
`cached_input_per_mtok`, a batch answer at `batch_discount` of the online price), else genai-prices (which
knows cached and batch prices of the hosted models), else 0.
Volatile message fields (timestamps, run ids, usage) are left out of the key, so the same conversation
always maps to the same key; a retry after `ModelRetry` is simply a longer conversation with its own key.
A reply the asker could not use (a judge's malformed output: no parseable verdict, `agents.jury`) is retired
(`CachedModel.retire`, the keys of the run gathered by `recorded_keys`): its record moves to a key no request
has, so its cost still counts against the budget but it is never replayed, and the next ask is sent again (under
the budget and the asker's own retry schedule) instead of replaying the same unusable reply forever.
One call per key at a time (`InFlight`, shared by the models of one factory): a second asker of a key whose
call is on its way waits for that answer and reads it from the cache, instead of paying for it again (two
entities with the same document ask the same translations; two stage tasks may ask them at the same moment).

`agents/` knows no SQL: the store implements the small `CallCache` protocol (`storage.llm_cache`); the
record both sides share, `CachedCall`, is a kernel fact (`clkt.calls`).
The monthly budget is checked here, before any paid (uncached) call: once spent, `BudgetExhausted`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import KnownModelName, Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from clkt import clock as _clock
from clkt.calls import CachedCall, month_start, retired_key
from clkt.config import PriceSettings
from clkt.errors import BudgetExhausted

__all__ = [
    "Budget",
    "CacheStats",
    "CachedCall",
    "CachedModel",
    "CallCache",
    "InFlight",
    "MemoryCallCache",
    "call_key",
    "cost_usd",
    "month_start",
    "price_of",
    "recorded_keys",
]

_RESPONSE = TypeAdapter(ModelResponse)
_KEEP_MESSAGE = ("kind", "instructions", "parts")
_KEEP_PART = ("part_kind", "content", "tool_name", "args", "tool_call_id", "outcome")




class CallCache(Protocol):
    async def get(self, key: str) -> CachedCall | None: ...

    async def put(self, call: CachedCall) -> None:
        """Store a call; storing the same key twice keeps the first."""
        ...

    async def spent_usd(self, *, since: datetime) -> float:
        """Cost of the calls stored since `since`."""
        ...

    async def retire(self, keys: Sequence[str]) -> None:
        """Never replay the calls of `keys` again (each moved to a `retired_key`: kept, its cost still counted)."""
        ...


_RUN_KEYS: ContextVar[list[str] | None] = ContextVar("clkt_run_keys", default=None)


@contextmanager
def recorded_keys() -> Iterator[list[str]]:
    """The cache keys of the calls a `CachedModel` makes or replays inside the block (this task's), in order."""
    keys: list[str] = []
    token = _RUN_KEYS.set(keys)
    try:
        yield keys
    finally:
        _RUN_KEYS.reset(token)


class MemoryCallCache:
    """An in-process `CallCache` (tests, benches); the daemon uses `storage.llm_cache.SqlCallCache`."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[datetime, CachedCall]] = {}

    async def get(self, key: str) -> CachedCall | None:
        hit = self.calls.get(key)
        return hit[1] if hit else None

    async def put(self, call: CachedCall) -> None:
        self.calls.setdefault(call.key, (_clock.now(), call))

    async def spent_usd(self, *, since: datetime) -> float:
        return sum(c.cost_usd for ts, c in self.calls.values() if ts >= since)

    async def retire(self, keys: Sequence[str]) -> None:
        for key in keys:
            hit = self.calls.pop(key, None)
            if hit is not None:
                new = retired_key(key)
                self.calls[new] = (hit[0], hit[1].model_copy(update={"key": new}))


class InFlight:
    """The keys whose call is on its way in this process, each with the event set when its caller is done
    (answer stored, or failed). Shared by every `CachedModel` over the same cache."""

    def __init__(self) -> None:
        self._calls: dict[str, asyncio.Event] = {}

    def __len__(self) -> int:
        return len(self._calls)

    async def lead(self, key: str) -> None:
        """Wait until no other caller of `key` is on its way, then become its caller (`done(key)` after)."""
        while (other := self._calls.get(key)) is not None:
            await other.wait()
        self._calls[key] = asyncio.Event()

    def done(self, key: str) -> None:
        event = self._calls.pop(key, None)
        if event is not None:
            event.set()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    by_stage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Budget:
    monthly_usd: float
    clock: Any = None  # () -> aware datetime; None: the process's clock (`clkt.clock`), as the stored calls' times

    def now(self) -> datetime:
        return self.clock() if self.clock is not None else _clock.now()




def price_of(model: str, prices: dict[str, PriceSettings]) -> PriceSettings | None:
    """The price of `model` ("provider:name"): by the full string, else by the bare model name."""
    return prices.get(model) or prices.get(model.split(":", 1)[-1])


def is_batch(response: ModelResponse) -> bool:
    """Answered through a provider batch (pydantic-ai's batch codecs mark it for batch pricing)."""
    return (response.provider_details or {}).get("processing") == "batch"


def cost_usd(response: ModelResponse, price: PriceSettings | None) -> float:
    """The price of one answer: the configured price (cached input and batch discounts), else genai-prices."""
    u = response.usage
    if price is None:
        try:
            return float(response.cost().total_price)
        except Exception:  # noqa: BLE001 - a model genai-prices does not know costs what the config says: 0
            return 0.0
    cached = min(u.cache_read_tokens, u.input_tokens)
    cached_price = price.cached_input_per_mtok if price.cached_input_per_mtok is not None else price.input_per_mtok
    cost = ((u.input_tokens - cached) * price.input_per_mtok + cached * cached_price
            + u.output_tokens * price.output_per_mtok) / 1e6
    return cost * price.batch_discount if is_batch(response) else cost


def _strip(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in to_jsonable_python(messages):
        msg = {k: m.get(k) for k in _KEEP_MESSAGE if k in m}
        msg["parts"] = [{k: p.get(k) for k in _KEEP_PART if k in p} for p in m.get("parts", [])]
        out.append(msg)
    return out


def call_key(
    *,
    model: str,
    prompt_version: str,
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> str:
    """sha256 of (model, settings, prompt version, messages without volatile fields, output schema)."""
    payload = {
        "model": model,
        "prompt_version": prompt_version,
        "settings": to_jsonable_python(model_settings or {}),
        "messages": _strip(messages),
        "output_mode": params.output_mode,
        "output_tools": [
            {"name": t.name, "schema": t.parameters_json_schema} for t in params.output_tools
        ],
        "output_object": to_jsonable_python(params.output_object) if params.output_object else None,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedModel(WrapperModel):
    """Answers from the cache when it can; otherwise calls the wrapped model and stores the answer."""

    def __init__(
        self,
        wrapped: Model | KnownModelName | str,
        *,
        cache: CallCache,
        model: str,
        stage: str,
        prompt_version: str,
        price: PriceSettings | None = None,
        budget: Budget | None = None,
        stats: CacheStats | None = None,
        on_call: Callable[[CachedCall, bool], None] | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.in_flight = in_flight if in_flight is not None else InFlight()
        self.on_call = on_call  # (call, cached) -> None: metrics
        self.cache = cache
        self.model_label = model
        self.stage = stage
        self.prompt_version = prompt_version
        self.price = price
        self.budget = budget
        self.stats = stats if stats is not None else CacheStats()

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        key = call_key(
            model=self.model_label,
            prompt_version=self.prompt_version,
            messages=messages,
            model_settings=model_settings,
            params=model_request_parameters,
        )
        run = _RUN_KEYS.get()
        if run is not None:
            run.append(key)
        # the cache is read only once no other caller of this key is on its way: its answer is stored by then
        await self.in_flight.lead(key)
        try:
            return await self._answer(key, messages, model_settings, model_request_parameters)
        finally:
            self.in_flight.done(key)

    async def _answer(
        self,
        key: str,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        hit = await self.cache.get(key)
        if hit is not None:
            self.stats.hits += 1
            if self.on_call is not None:
                self.on_call(hit, True)
            return _RESPONSE.validate_python(hit.response)
        await self._check_budget()
        t0 = time.perf_counter()
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        latency_ms = (time.perf_counter() - t0) * 1000
        usage = response.usage
        cost = cost_usd(response, self.price)
        call = CachedCall(
            key=key,
            model=self.model_label,
            stage=self.stage,
            prompt_version=self.prompt_version,
            response=_RESPONSE.dump_python(response, mode="json"),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
            cached_input_tokens=min(usage.cache_read_tokens, usage.input_tokens),
            batch=is_batch(response),
        )
        await self.cache.put(call)
        if self.on_call is not None:
            self.on_call(call, False)
        s = self.stats
        s.misses += 1
        s.input_tokens += usage.input_tokens
        s.output_tokens += usage.output_tokens
        s.cost_usd += cost
        s.by_stage[self.stage] = s.by_stage.get(self.stage, 0) + 1
        return response

    async def retire(self, keys: Sequence[str]) -> None:
        """Never replay these calls' answers (a reply the asker could not use): the next ask is sent again."""
        await self.cache.retire(keys)

    async def _check_budget(self) -> None:
        if self.budget is None:
            return
        now = self.budget.now()
        spent = await self.cache.spent_usd(since=month_start(now))
        if spent >= self.budget.monthly_usd:
            raise BudgetExhausted(
                f"monthly LLM budget of ${self.budget.monthly_usd:.2f} is spent (${spent:.2f} since "
                f"{month_start(now):%Y-%m-%d}); paid stages pause until next month"
            )
