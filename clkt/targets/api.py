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
    naming the target and the variable, never its value) for an unknown provider or a missing key."""
    from agents.factory import resolve_model

    out: dict[str, ResolvedModel] = {}
    for i, t in enumerate(targets):
        if is_api_target(t):
            out[t.name] = resolve_model(agents, t.model, key=f"spec.targets[{i}].model ({t.name})", secret=secret)
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

    def __init__(self, *, factory: ModelFactory) -> None:
        self.factory = factory
        self._models: dict[tuple[str, str], CachedModel] = {}

    @classmethod
    def build(cls, *, agents: AgentSettings, secret: SecretLookup, cache: CallCache,
              factory: ModelFactory | None = None) -> ApiTargets:
        """Over `factory` (the daemon's LLM backend's, so the limiters are shared) or a new one over `cache`."""
        from agents.factory import ModelFactory

        return cls(factory=factory or ModelFactory(agents=agents, secret=secret, cache=cache))

    def model(self, target: TargetSettings, *, stage: str) -> CachedModel:
        """The cached, rate-limited model of `target` for `stage` (the call records' stage: probe, incontext)."""
        key = (target.name, stage)
        if key not in self._models:
            self._models[key] = self.factory.for_model(
                target.model, key=f"target {target.name}", stage=stage, prompt_version=TARGET_PROMPT_VERSION
            )
        return self._models[key]

    async def ask(self, target: TargetSettings, prompt: str, *, max_tokens: int, stage: str) -> ApiAnswer:
        """The answer of `target` to `prompt` at temperature 0 (at most `max_tokens`), through limiter + cache."""
        from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.settings import ModelSettings

        from agents.cache import cost_usd
        from clkt.errors import AgentError, ClktError

        model = self.model(target, stage=stage)
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
    if isinstance(factory, ModelFactory):
        return ApiTargets(factory=factory)
    return ApiTargets.build(agents=agents, secret=secret, cache=SqlCallCache(ctx.store))
