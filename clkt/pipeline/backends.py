"""The agent backend of the stage workers, from `agents.backend`.

"template" → the deterministic offline engine (`agents.template.TemplateBackend`); "llm" → the pydantic-ai
agents (`agents.llm.LlmBackend`) with the call cache in the store. One backend per daemon, built at start
(`ServiceContext.agent_backend`); `check_backend_config()` runs at start-up so a missing API key stops the
daemon with a clear `ConfigError` instead of failing tasks later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, get_args

from agents.backend import AgentBackend
from clkt.config import AgentRole, AgentSettings, SecretLookup
from clkt.errors import ConfigError, UserError

if TYPE_CHECKING:
    from clkt.calls import CachedCall
    from clkt.context import ServiceContext
    from clkt.telemetry import Metrics
    from storage.engine import Store

__all__ = ["backend_for", "build_backend", "check_backend_config", "uses_batches"]

def check_backend_config(agents: AgentSettings, *, secret: SecretLookup) -> None:
    if agents.backend == "llm":
        from agents.factory import check_llm_config

        check_llm_config(agents, secret=secret)


def build_backend(
    agents: AgentSettings, *, languages: Sequence[str], secret: SecretLookup, store: Store,
    metrics: Metrics | None = None,
) -> AgentBackend:
    """The backend `agents.backend` names; the LLM one caches its calls in `store` and reads its keys by `secret`."""
    kind = agents.backend
    if kind == "template":
        from agents.template import TemplateBackend

        return TemplateBackend()
    if kind == "llm":
        from agents.factory import ModelFactory
        from agents.llm import LlmBackend
        from storage.llm_cache import SqlCallCache

        check_backend_config(agents, secret=secret)
        cache = SqlCallCache(store)
        observer = _observer(metrics) if metrics else None
        factory = ModelFactory(agents=agents, secret=secret, cache=cache, on_call=observer)
        if uses_batches(agents):
            from agents.batch import BatchDispatcher
            from storage.llm_batches import SqlBatchStore

            b = agents.batch
            factory.batch_store = SqlBatchStore(store)
            factory.dispatcher = BatchDispatcher(
                store=factory.batch_store, max_requests=b.max_requests, flush_after_s=b.flush_after_s,
                poll_interval_s=b.poll_interval_s, max_tries=b.max_tries,
            )
        return LlmBackend(agents=agents, languages=languages, cache=cache, factory=factory)
    raise ConfigError("agents.backend", f"unknown backend {kind!r}")


def uses_batches(agents: AgentSettings) -> bool:
    """Whether any LLM stage runs in batch mode."""
    return any(agents.batched(role) for role in get_args(AgentRole))


def backend_for(ctx: ServiceContext) -> AgentBackend:
    """The daemon's one agent backend (tests give their own through `ServiceContext(agent_backend=...)`)."""
    if ctx.agent_backend is None:
        raise UserError("this ServiceContext has no agent backend: build one with build_backend() and pass it")
    return ctx.agent_backend


def _observer(metrics: Metrics) -> Callable[[CachedCall, bool], None]:
    """Counts every LLM call in the daemon's metrics (cached calls cost nothing)."""

    def observe(call: CachedCall, cached: bool) -> None:
        metrics.llm_calls.labels(call.model, "yes" if cached else "no").inc()
        if not cached:
            metrics.llm_tokens.labels(call.model, "input").inc(call.input_tokens)
            metrics.llm_tokens.labels(call.model, "output").inc(call.output_tokens)
            metrics.llm_cost.labels(call.stage).inc(call.cost_usd)

    return observe
