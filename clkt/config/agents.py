"""`[agents]`: the agent backend of the stages, its models, providers, prices, batch mode and budget; the open
track's jury (`[agents.jury]`, `clkt.config.jury`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from clkt.config._base import Section
from clkt.config.jury import JuryConfig
from clkt.facts import Domain

__all__ = [
    "AgentMode", "AgentRole", "AgentSettings", "BatchSettings", "LlmRole", "OutputMode", "PriceSettings",
    "ProviderSettings",
]

AgentMode = Literal["online", "batch"]
# the agent roles of the pipeline (`clkt.pipeline.flow` says which stage uses which), and "incontext": the
# in-context track's calls to API targets (`clkt.incontext`), whose mode `stage_modes` may set apart
AgentRole = Literal["judge", "generate", "verify", "translate", "incontext"]


# the pydantic-ai agent roles (the keys of `max_tokens` and `output_modes`)
LlmRole = Literal["judge", "generate", "verify", "translate"]
# how a role's agent gets its typed output: "tool" (the output tool: needs tool calling), "prompted" (the JSON
# schema in the prompt, JSON read from the text: any chat model), "auto" (the tool, and "prompted" from the first
# call whose model answered only in text or whose server refused tools)
OutputMode = Literal["tool", "prompted", "auto"]


class ProviderSettings(Section):
    """An LLM provider: an OpenAI-compatible base URL (vLLM, Ollama...) or a hosted API."""

    base_url: str | None = None  # an OpenAI-compatible server (None: the provider's hosted API)
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    rpm: int = Field(default=500, ge=1, le=10_000_000)  # requests per minute at most
    tpm: int = Field(default=200_000, ge=1, le=10_000_000_000)  # tokens per minute at most
    max_in_flight: int = Field(default=8, ge=1, le=1024)  # requests at once (halved on a 429)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)  # one request
    max_attempts: int = Field(default=5, ge=1, le=100)  # tries per call (429/5xx/timeouts), Retry-After honoured


class PriceSettings(Section):
    """A model's prices in USD per million tokens (`[agents.prices."<provider>:<model>"]`), over genai-prices' own."""

    input_per_mtok: float = Field(ge=0, le=1_000_000)  # USD per million input tokens
    output_per_mtok: float = Field(ge=0, le=1_000_000)  # USD per million output tokens
    cached_input_per_mtok: float | None = Field(default=None, ge=0, le=1_000_000)  # None: the input price
    batch_discount: float = Field(default=0.5, gt=0, le=1)  # batch price = this x the online price


class BatchSettings(Section):
    """Batch mode: how requests are collected into provider batches and polled."""

    max_requests: int = Field(default=1000, ge=1, le=50_000)  # per batch
    # submit once the oldest queued request waited this long
    flush_after_s: float = Field(default=300.0, ge=0, le=86_400)
    poll_interval_s: float = Field(default=60.0, gt=0, le=86_400)  # how often a submitted batch is asked about
    max_tries: int = Field(default=3, ge=1, le=100)  # batches a request may expire or be cancelled in


class AgentSettings(Section):
    """The agents of the pipeline's stages (judge, generate, verify, translate): their backend, models and limits."""

    # "template": the deterministic multilingual template engine (offline); "llm": pydantic-ai agents on the models below
    backend: Literal["template", "llm"] = "template"
    judge_model: str | None = None  # pydantic-ai model strings, e.g. "openai:gpt-4o-mini"
    generator_model: str | None = None  # writes the questions
    verifier_model: str | None = None  # checks them (another model than the generator)
    translator_model: str | None = None  # translates questions and documents
    allow_same_verifier: bool = False  # accept verifier_model = generator_model
    mode: AgentMode = "online"  # "batch": the provider's batch API, at batch prices, answers within 24 h
    stage_modes: dict[AgentRole, AgentMode] = Field(default_factory=dict)  # per role, over `mode` (e.g. { verify = "online" })
    batch: BatchSettings = Field(default_factory=BatchSettings)
    output_retries: int = Field(default=3, ge=0, le=20)  # repairs of an answer that does not fit its output model
    # per role: the most tokens one answer may take (the request's max_tokens); unset: the provider's default
    max_tokens: dict[LlmRole, Annotated[StrictInt, Field(ge=1, le=1_000_000)]] = Field(default_factory=dict)
    output_modes: dict[LlmRole, OutputMode] = Field(default_factory=dict)  # per role; unset: "auto"
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    # the paid stages defer their tasks to next month once this month's LLM cost reaches it (None: no budget)
    monthly_budget_usd: float | None = Field(default=None, ge=0, le=10_000_000)
    questions_per_entity: int = Field(default=5, ge=1, le=20)  # questions the generator writes per entity
    # per-domain caps that replace `questions_per_entity` for their domain (e.g. { sports = 4 })
    questions_per_domain: dict[Domain, int] = Field(default_factory=dict)
    concurrency: int = Field(default=4, ge=1, le=1024)  # tasks each agent stage runs at once
    probe_max_new_tokens: int = Field(default=96, ge=8, le=1024)  # target-model probe answer length
    jury: JuryConfig = Field(default_factory=JuryConfig)  # the open track's LLM judges (`clkt.config.jury`); none by default

    @model_validator(mode="after")
    def _llm_models(self) -> AgentSettings:
        if self.backend == "llm":
            for role in ("judge_model", "generator_model", "verifier_model", "translator_model"):
                if not getattr(self, role):
                    raise ValueError(f"{role} is required when backend = 'llm'")
            if self.verifier_model == self.generator_model and not self.allow_same_verifier:
                raise ValueError(
                    "verifier_model must differ from generator_model "
                    "(set allow_same_verifier = true to accept the same model)"
                )
        return self

    def mode_of(self, role: str) -> AgentMode:
        """The mode of a role (judge, generate, verify, translate): its override, else `mode`."""
        for r, mode in self.stage_modes.items():
            if r == role:
                return mode
        return self.mode

    def output_mode(self, role: str) -> OutputMode:
        """How `role`'s agent gets its typed output (`output_modes`, else "auto")."""
        for r, mode in self.output_modes.items():
            if r == role:
                return mode
        return "auto"

    def max_tokens_of(self, role: str) -> int | None:
        """The answer-length cap of `role` (`max_tokens`), None when unset."""
        for r, n in self.max_tokens.items():
            if r == role:
                return n
        return None

    def incontext_batched(self) -> bool:
        """Whether the in-context track's API calls go through provider batches (any backend: the track asks the
        API targets, not the agent roles)."""
        return self.mode_of("incontext") == "batch"

    def batched(self, role: str | None) -> bool:
        """Whether `role`'s LLM calls go through provider batches (never for the template engine or no role)."""
        return role is not None and self.backend == "llm" and self.mode_of(role) == "batch"

    @field_validator("questions_per_domain")
    @classmethod
    def _per_domain(cls, v: dict[Domain, int]) -> dict[Domain, int]:
        bad = {d.value: n for d, n in v.items() if not 1 <= n <= 20}
        if bad:
            raise ValueError(f"questions per domain must be between 1 and 20, got {bad}")
        return v

    def question_cap(self, domain: str) -> int:
        """How many questions the generator writes per entity of `domain`."""
        for d, n in self.questions_per_domain.items():
            if d.value == domain:
                return n
        return self.questions_per_entity
