"""API targets: a target that is a model string the agents accept (`backend = "api"`), asked through the agents.

`model` is a pydantic-ai model string `<provider>:<model>` resolved exactly as an agent role's model is
(`agents.factory.resolve_model`): `openai:<model>` and `anthropic:<model>` are the hosted APIs (key from
`OPENAI_API_KEY` / `ANTHROPIC_API_KEY`, or the provider's `api_key_env`), any other `<provider>` names an
`[agents.providers.<provider>]` with a `base_url` (an OpenAI-compatible server: vLLM, Ollama, `transformers serve`).
Such a target has no weights here: it is probed and judged like a local target, takes part in the in-context track
(`clkt.incontext`), and is never sent to the GPU queue (`is_api_target`).

Every answer goes through the agents' model stack, `CachedModel(RateLimitedModel(<provider model>))`: the
provider's limiter (shared with the agent roles of the same provider when the daemon's LLM backend is given),
the LLM call cache (a rerun pays nothing twice) and the monthly budget. Temperature 0, one user message.
`check_api_targets` runs at start: a provider without a key (or an unknown provider) is one `ConfigError` line
before anything runs; the key is read from the environment through the secret lookup only, and never logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agents.batch import BatchStore
    from agents.cache import CachedModel, CallCache
    from agents.factory import ModelFactory, ResolvedModel
    from clkt.config import AgentSettings, SecretLookup, TargetSettings
    from clkt.context import ServiceContext

__all__ = ["API_BACKEND", "ApiAnswer", "ApiTargets", "api_targets_for", "check_api_targets", "is_api_target"]

API_BACKEND = "api"
TARGET_PROMPT_VERSION = "target-v1"  # part of every cached call's key: bump when the request's shape changes


def is_api_target(target: TargetSettings) -> bool:
    """Whether `target` is an API model (no weights here: never a GPU job)."""
    return target.backend == API_BACKEND


def check_api_targets(
    targets: Sequence[TargetSettings], agents: AgentSettings, *, secret: SecretLookup
) -> dict[str, ResolvedModel]:
    """Resolve every API target's model against `[agents.providers]` and the keys: a `ConfigError` (one line,
    naming the target and the variable, never its value) for an unknown provider or a missing key, or, when the
    in-context track runs in batch mode (`AgentSettings.incontext_batched`), a provider without a batch API."""
    from agents.factory import check_batch_provider, resolve_model

    out: dict[str, ResolvedModel] = {}
    for i, t in enumerate(targets):
        if is_api_target(t):
            key = f"spec.targets[{i}].model ({t.name})"
            out[t.name] = resolve_model(agents, t.model, key=key, secret=secret)
            if agents.incontext_batched():
                check_batch_provider(out[t.name], key=key)
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiAnswer:
    text: str
    input_tokens: int
    output_tokens: int
    cost_usd: float  # the call's price (the same figure whether it was paid now or replayed from the cache)
    cached: bool  # answered from the LLM cache (paid for nothing now; read from the model's hit count, so only
    # exact when no other call of the same model runs at the same moment)


class ApiTargets:
    """The API targets' models, built once each from the agents' `ModelFactory` (its limiters, cache, budget)."""

    def __init__(self, *, factory: ModelFactory, owns_dispatcher: bool = False) -> None:
        self.factory = factory
        # batch mode: this object's own dispatcher, ticked by `tick_batches` (else the daemon's `llm-batches`
        # service ticks the shared factory's)
        self.owns_dispatcher = owns_dispatcher
        self._models: dict[tuple[str, str, bool], CachedModel] = {}

    @classmethod
    def build(cls, *, agents: AgentSettings, secret: SecretLookup, cache: CallCache,
              factory: ModelFactory | None = None, batch_store: BatchStore | None = None) -> ApiTargets:
        """Over `factory` (the daemon's LLM backend's, so the limiters are shared) or a new one over `cache`; with
        `batch_store` (batch mode), a new factory gets a batch dispatcher of its own over it."""
        from agents.factory import ModelFactory

        if factory is not None:
            return cls(factory=factory)
        factory = ModelFactory(agents=agents, secret=secret, cache=cache)
        if batch_store is None:
            return cls(factory=factory)
        from agents.batch import BatchDispatcher

        b = agents.batch
        factory.batch_store = batch_store
        factory.dispatcher = BatchDispatcher(store=batch_store, max_requests=b.max_requests,
                                             flush_after_s=b.flush_after_s, poll_interval_s=b.poll_interval_s,
                                             max_tries=b.max_tries)
        return cls(factory=factory, owns_dispatcher=True)

    def model(self, target: TargetSettings, *, stage: str, batch: bool = False) -> CachedModel:
        """The cached, rate-limited model of `target` for `stage` (the call records' stage: probe, incontext);
        with `batch`, through the provider's batch API instead (`agents.batch`: `BatchPending` until answered)."""
        key = (target.name, stage, batch)
        if key not in self._models:
            self._models[key] = self.factory.for_model(
                target.model, key=f"target {target.name}", stage=stage, prompt_version=TARGET_PROMPT_VERSION,
                batch=batch,
            )
        return self._models[key]

    async def tick_batches(self, *, force_flush: bool = True) -> None:
        """Batch mode with a dispatcher of its own: submit what is queued, poll and collect what is open."""
        if self.owns_dispatcher and self.factory.dispatcher is not None:
            await self.factory.dispatcher.tick(force_flush=force_flush)

    async def ask(self, target: TargetSettings, prompt: str, *, max_tokens: int, stage: str,
                  batch: bool = False) -> ApiAnswer:
        """The answer of `target` to `prompt` at temperature 0 (at most `max_tokens`), through limiter + cache; with
        `batch`, through the provider's batch API at its batch price (`BatchPending` until the answer is in)."""
        from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.settings import ModelSettings

        from agents.cache import cost_usd
        from clkt.errors import AgentError, ClktError

        model = self.model(target, stage=stage, batch=batch)
        hits = model.stats.hits
        settings = ModelSettings(temperature=0.0, max_tokens=max_tokens)
        try:
            response = await model.request(
                [ModelRequest(parts=[UserPromptPart(content=prompt)])], settings, ModelRequestParameters()
            )
        except ClktError:
            raise
        except Exception as e:  # provider errors left after the limiter's retries: one line
            raise AgentError(f"target {target.name}: {type(e).__name__}: {e}"[:500]) from e
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        return ApiAnswer(
            text=text.strip(), input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens,
            cost_usd=cost_usd(response, model.price), cached=model.stats.hits > hits,
        )


def api_targets_for(ctx: ServiceContext, *, agents: AgentSettings, secret: SecretLookup) -> ApiTargets:
    """The API targets of a daemon: over its LLM backend's factory when it has one (limiters, cache and budget
    shared with the agent roles), else over a factory of their own caching in the store."""
    from agents.factory import ModelFactory
    from storage.llm_cache import SqlCallCache

    factory = getattr(ctx.agent_backend, "factory", None)
    if isinstance(factory, ModelFactory) and (factory.dispatcher is not None or not agents.incontext_batched()):
        return ApiTargets(factory=factory)
    batch_store = None
    if agents.incontext_batched():
        from storage.llm_batches import SqlBatchStore

        batch_store = SqlBatchStore(ctx.store)
    return ApiTargets.build(agents=agents, secret=secret, cache=SqlCallCache(ctx.store), batch_store=batch_store)
