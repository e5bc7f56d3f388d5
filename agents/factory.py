"""The model factory: pydantic-ai models for each agent role, from the config.

A role's model is a pydantic-ai model string `<provider>:<model>`:
- `<provider>` names an entry of `[agents.providers.<provider>]` with a `base_url`: any OpenAI-compatible
  server (vLLM, Ollama, llama.cpp's server, a gateway), e.g. `myvllm:qwen2.5-7b`;
- `openai:<model>` and `anthropic:<model>`: the hosted APIs (limits from `[agents.providers.openai]` /
  `[agents.providers.anthropic]` when present, else the defaults).
The key comes only from the secret lookup the caller passes (`Settings.secret`), for `provider.api_key_env`
(or the conventional `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`); a hosted model without a key is a
`ConfigError` at start-up, never a failed call later. The factory receives the `[agents]` section and that
lookup, never the whole configuration.

Each role's model is `CachedModel(RateLimitedModel(<provider model>))`, the limiter shared per provider; a
role in batch mode (`[agents] mode` or `stage_modes`) is `CachedModel(BatchedModel(<batch-capable model>))`
(OpenAI's Responses model, Anthropic's model: the two with a batch API), its batches run by the
`BatchDispatcher`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model

from agents.batch import BatchDispatcher, BatchedModel, BatchStore, ProviderKind
from agents.cache import Budget, CachedCall, CachedModel, CacheStats, CallCache, InFlight, price_of
from agents.limits import ProviderLimiter, RateLimitedModel
from clkt.config import AgentSettings, ProviderSettings, SecretLookup
from clkt.errors import ConfigError

__all__ = ["ROLES", "ModelFactory", "ResolvedModel", "check_batch_provider", "check_llm_config", "resolve_model"]

ROLES: dict[str, str] = {  # agent role -> the AgentSettings field naming its model
    "judge": "judge_model",
    "generate": "generator_model",
    "verify": "verifier_model",
    "translate": "translator_model",
}
_HOSTED_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True, kw_only=True)
class ResolvedModel:
    model: str  # the configured model string
    provider: str
    name: str
    settings: ProviderSettings
    base_url: str | None
    api_key: str | None  # resolved secret (never logged; not in repr)

    def __repr__(self) -> str:
        return f"ResolvedModel(model={self.model!r}, provider={self.provider!r}, base_url={self.base_url!r})"


def resolve_model(agents: AgentSettings, model: str, *, key: str, secret: SecretLookup) -> ResolvedModel:
    """Check one model string against the providers and secrets; `key` names the setting for errors."""
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise ConfigError(key, f"model {model!r} must be '<provider>:<model>' (e.g. 'openai:gpt-4o-mini')")
    p = agents.providers.get(provider)
    if p is None and provider not in _HOSTED_KEY_ENV:
        raise ConfigError(
            key,
            f"unknown provider {provider!r} in {model!r}: add [agents.providers.{provider}] with a base_url, "
            f"or use one of {sorted(_HOSTED_KEY_ENV)}",
        )
    p = p or ProviderSettings()
    hosted = p.base_url is None
    if hosted and provider not in _HOSTED_KEY_ENV:
        raise ConfigError(f"agents.providers.{provider}.base_url", "required for a non-hosted provider")
    env = p.api_key_env or (_HOSTED_KEY_ENV.get(provider) if hosted else None)
    value = secret(env)
    if env and value is None and (hosted or p.api_key_env):
        raise ConfigError(
            f"agents.providers.{provider}.api_key_env",
            f"{model!r} ({key}) needs an API key: set the environment variable {env}",
        )
    return ResolvedModel(
        model=model, provider=provider, name=name, settings=p, base_url=p.base_url,
        api_key=value.get_secret_value() if value is not None else None,
    )


def check_llm_config(agents: AgentSettings, *, secret: SecretLookup) -> dict[str, ResolvedModel]:
    """Start-up check of the LLM backend's configuration: every role's model resolves, keys exist."""
    out: dict[str, ResolvedModel] = {}
    for role, attr in ROLES.items():
        model = getattr(agents, attr)
        if not model:
            raise ConfigError(f"agents.{attr}", "required when backend = 'llm'")
        out[role] = resolve_model(agents, model, key=f"agents.{attr}", secret=secret)
    if agents.verifier_model == agents.generator_model and not agents.allow_same_verifier:
        raise ConfigError("agents.verifier_model", "must differ from generator_model unless allow_same_verifier")
    for role, r in out.items():
        if agents.mode_of(role) == "batch" and r.provider not in _BATCH_PROVIDERS:
            raise ConfigError(
                f"agents.stage_modes.{role}" if role in agents.stage_modes else "agents.mode",
                f"{r.model!r} ({role}): provider {r.provider!r} has no batch API; batch mode needs an "
                f"{' or '.join(_BATCH_PROVIDERS)} model (or set this stage to 'online')",
            )
    return out


_BATCH_PROVIDERS: tuple[ProviderKind, ...] = ("openai", "anthropic")


def check_batch_provider(r: ResolvedModel, *, key: str) -> None:
    """A `ConfigError` unless `r`'s provider has a batch API (OpenAI, Anthropic), for a call in batch mode."""
    if r.provider not in _BATCH_PROVIDERS:
        raise ConfigError(
            key, f"{r.model!r}: provider {r.provider!r} has no batch API; batch mode needs an "
            f"{' or '.join(_BATCH_PROVIDERS)} model (or set agents.stage_modes.incontext = 'online')",
        )


def _batch_model(r: ResolvedModel) -> tuple[Model, ProviderKind]:
    """The provider's batch-capable pydantic-ai model: OpenAI's Responses model or Anthropic's model."""
    timeout = r.settings.timeout_s
    if r.provider == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        aclient = AsyncAnthropic(api_key=r.api_key or "none", base_url=r.base_url, max_retries=0, timeout=timeout)
        return AnthropicModel(r.name, provider=AnthropicProvider(anthropic_client=aclient)), "anthropic"
    if r.provider == "openai":
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        oclient = AsyncOpenAI(base_url=r.base_url, api_key=r.api_key or "none", max_retries=0, timeout=timeout)
        return OpenAIResponsesModel(r.name, provider=OpenAIProvider(openai_client=oclient)), "openai"
    raise ConfigError("agents.mode", f"{r.model!r}: provider {r.provider!r} has no batch API")


def _provider_model(r: ResolvedModel, limiter: ProviderLimiter | None = None, *,
                    clients: dict[str, Any] | None = None) -> Model:
    """The provider's pydantic-ai model; with `limiter`, its HTTP client paces at the wire and reads headers.

    `clients` (the factory's) holds one SDK client per provider, so every role's model of a provider shares
    one HTTP connection pool (and one TLS context) instead of each opening its own."""
    client = clients.get(r.provider) if clients is not None else None
    if r.provider == "anthropic" and r.base_url is None:
        try:
            from anthropic import AsyncAnthropic
            from anthropic import DefaultAsyncHttpxClient as AnthropicHttpClient
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider
        except ImportError as e:
            raise ConfigError("agents", f"{r.model!r} needs `pip install 'pydantic-ai-slim[anthropic]'`") from e
        if client is None:
            hooks = limiter.http_hooks() if limiter is not None else None
            http = AnthropicHttpClient(event_hooks=hooks) if hooks else None
            client = AsyncAnthropic(api_key=r.api_key, max_retries=0, timeout=r.settings.timeout_s, http_client=http)
        if clients is not None:
            clients[r.provider] = client
        return AnthropicModel(r.name, provider=AnthropicProvider(anthropic_client=client))
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    if client is None:
        hooks = limiter.http_hooks() if limiter is not None else None
        http_client = DefaultAsyncHttpxClient(event_hooks=hooks) if hooks else None
        client = AsyncOpenAI(
            base_url=r.base_url, api_key=r.api_key or "none", max_retries=0, timeout=r.settings.timeout_s,
            http_client=http_client,
        )
    if clients is not None:
        clients[r.provider] = client
    if r.base_url is None:
        return OpenAIChatModel(r.name, provider=OpenAIProvider(openai_client=client))
    return OpenAIChatModel(r.name, provider=OpenAICompatibleProvider(r.provider, openai_client=client))


@dataclass
class ModelFactory:
    """Builds `CachedModel(RateLimitedModel(provider model))` per role; one limiter per provider."""

    agents: AgentSettings
    secret: SecretLookup  # the providers' API keys by the name of their environment variable
    cache: CallCache
    budget: Budget | None = None
    stats: CacheStats = field(default_factory=CacheStats)
    limiters: dict[str, ProviderLimiter] = field(default_factory=dict)
    on_call: Callable[[CachedCall, bool], None] | None = None  # (call, cached): metrics
    batch_store: BatchStore | None = None  # batch mode: where queued calls and batches live
    dispatcher: BatchDispatcher | None = None  # batch mode: the daemon's batch service registers models here
    clients: dict[str, Any] = field(default_factory=dict)  # provider -> its one SDK client (online models)
    in_flight: InFlight = field(default_factory=InFlight)  # one call per key at a time, whatever the role

    def __post_init__(self) -> None:
        if self.budget is None and self.agents.monthly_budget_usd is not None:
            self.budget = Budget(monthly_usd=self.agents.monthly_budget_usd)

    def limiter(self, provider: str, p: ProviderSettings) -> ProviderLimiter:
        if provider not in self.limiters:
            self.limiters[provider] = ProviderLimiter.from_settings(provider, p)
        return self.limiters[provider]

    def wrap(
        self, raw: Model, *, model: str, provider: str, stage: str, prompt_version: str, paced_at_wire: bool = False
    ) -> CachedModel:
        """Limits + cache around any model (the provider's, or a FunctionModel in tests)."""
        p = self.agents.providers.get(provider) or ProviderSettings()
        limited = RateLimitedModel(
            raw, limiter=self.limiter(provider, p), timeout_s=p.timeout_s, max_attempts=p.max_attempts,
            paced_at_wire=paced_at_wire,
        )
        return CachedModel(
            limited, cache=self.cache, model=model, stage=stage, prompt_version=prompt_version,
            price=price_of(model, self.agents.prices), budget=self.budget, stats=self.stats,
            on_call=self.on_call, in_flight=self.in_flight,
        )

    def for_role(self, role: str, *, prompt_version: str) -> CachedModel:
        attr = ROLES[role]
        model = getattr(self.agents, attr)
        r = resolve_model(self.agents, model, key=f"agents.{attr}", secret=self.secret)
        if self.agents.mode_of(role) == "batch":
            return self._batched(r, role=role, prompt_version=prompt_version)
        raw = _provider_model(r, self.limiter(r.provider, r.settings), clients=self.clients)
        return self.wrap(
            raw, model=model, provider=r.provider, stage=role, prompt_version=prompt_version, paced_at_wire=True
        )

    def for_model(self, model: str, *, key: str, stage: str, prompt_version: str, batch: bool = False) -> CachedModel:
        """Limits + cache around any model string the roles accept (an API target's: `clkt.targets.api`), online,
        or with `batch` through the provider's batch API (`BatchedModel`, as a batched role); `key` names the
        setting for errors, `stage` labels its call records."""
        r = resolve_model(self.agents, model, key=key, secret=self.secret)
        if batch:
            check_batch_provider(r, key=key)
            return self._batched(r, role=stage, prompt_version=prompt_version)
        raw = _provider_model(r, self.limiter(r.provider, r.settings), clients=self.clients)
        return self.wrap(
            raw, model=model, provider=r.provider, stage=stage, prompt_version=prompt_version, paced_at_wire=True
        )

    def _batched(self, r: ResolvedModel, *, role: str, prompt_version: str) -> CachedModel:
        if self.batch_store is None or self.dispatcher is None:
            raise ConfigError("agents.mode", "batch mode needs the store (the daemon's backend), not an in-memory cache")
        raw, kind = _batch_model(r)
        self.dispatcher.register(r.model, raw, kind)
        batched = BatchedModel(
            raw, store=self.batch_store, model=r.model, stage=role, prompt_version=prompt_version,
            defer_s=min(BatchedModel.POLL_DEFER_S, self.agents.batch.poll_interval_s),
        )
        return CachedModel(
            batched, cache=self.cache, model=r.model, stage=role, prompt_version=prompt_version,
            price=price_of(r.model, self.agents.prices), budget=self.budget, stats=self.stats,
            on_call=self.on_call, in_flight=self.in_flight,
        )
