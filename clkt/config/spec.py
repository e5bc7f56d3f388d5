"""`[spec]`: the benchmark spec (whom we measure, in which languages, on which domains) and its targets."""

from __future__ import annotations

import re
from datetime import date
from typing import Literal, NewType

from pydantic import Field, field_validator, model_validator

from clkt.config._base import LANGS_DEFAULT, SUPPORTED_LANGS, Section
from clkt.config.strategies import DEFAULT_STRATEGY, check_strategy
from clkt.facts import Domain

__all__ = ["EMBEDDED_TARGET", "MAX_SEED", "ScorerLiteral", "SpecSettings", "Strategy", "TargetSettings", "training_seed"]


ScorerLiteral = Literal["option-loglik", "letter-logprob", "generate"]

# `<provider>:<model>` (two letters at least before the colon: `C:\\models` is a Windows folder, not a provider)
_PROVIDER_MODEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]+:[^/\\]")


class TargetSettings(Section):
    """A target model: the model we measure. `model` is a HF id, a local path, or `embedded:<name>`; with
    `backend = "api"` it is a model string the agents accept (`openai:gpt-4o-mini`, `anthropic:...`,
    `<provider>:<model>` for an `[agents.providers.<provider>]` with a base_url) and `cutoff` is required: an API
    target is probed and judged, takes the in-context track (`clkt.incontext`), and never goes to the GPU queue."""

    name: str  # the target's name in the store, reports and commands
    model: str  # a HF id, a local path, `embedded:<name>`, or `<provider>:<model>` with backend = "api"
    cutoff: date | None = None  # None: look up the registry of known cutoffs
    kind: Literal["base", "instruct"] = "base"  # picks the default scorers (base: option-loglik; instruct: generate)
    backend: Literal["local", "openai", "api"] = "local"  # local weights, an OpenAI-compatible server, or an API target
    base_url: str | None = None  # for backend = "openai" (e.g. a vLLM server of the target)
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    family: str | None = None  # the model family, for grouping in reports
    size_b: float | None = Field(default=None, gt=0, le=100_000)  # parameters in billions (Figure 4)
    # None: [gpu] scorers, else by kind (base: option-loglik; instruct: generate); see clkt.evaluate.scorers
    scorers: list[ScorerLiteral] | None = Field(default=None, min_length=1)
    circular: bool | None = None  # None: [gpu] circular (CircularEval of the letter scorers; clkt.evaluate.circular)
    # the model's context window in tokens (the in-context track truncates documents to fit; None: the track's
    # default for API targets, the tokenizer's for local ones)
    context_tokens: int | None = Field(default=None, ge=256, le=100_000_000)

    @model_validator(mode="after")
    def _api_target(self) -> TargetSettings:
        if self.backend == "local" and _PROVIDER_MODEL.match(self.model) and not self.model.startswith("embedded:"):
            # refused, not inferred: an API target needs its declared cutoff and sends questions to a paid
            # provider, neither of which a local target asks for, so the config must say so itself
            raise ValueError(
                f"target {self.name!r}: model {self.model!r} is a '<provider>:<model>' string, which a local target "
                f"cannot load; add backend = \"api\" (with cutoff = YYYY-MM-DD) to ask it through its provider, or "
                f"name a local model folder or a Hugging Face id"
            )
        if self.backend == "api":
            provider, sep, name = self.model.partition(":")
            if not sep or not provider or not name:
                raise ValueError(
                    f"target {self.name!r}: an API target's model must be '<provider>:<model>' "
                    f"(e.g. 'openai:gpt-4o-mini'), got {self.model!r}"
                )
            if self.cutoff is None:
                raise ValueError(
                    f"target {self.name!r}: an API target ({self.model}) needs its declared knowledge cutoff "
                    f"(cutoff = YYYY-MM-DD)"
                )
        return self


EMBEDDED_TARGET = TargetSettings(
    name="gemma-3-270m",
    model="embedded:gemma-3-270m",
    cutoff=date(2024, 8, 1),
    kind="base",
    family="gemma-3",
    size_b=0.27,
)


MAX_SEED = 2**32 - 1  # the largest seed (numpy's and `[gpu] seed`'s bound)


def training_seed(base: int, seed: int) -> int:
    """The seed a job of `spec.seeds` seed `seed` trains with, under `[gpu] seed` = `base`: their sum mod 2**32
    (seed 0 trains with `base`, as a job did before seeds)."""
    return (base + seed) % (MAX_SEED + 1)


# a strategy's name: one declared in `clkt.config.strategies` (checked by `SpecSettings` and `JobSpec`)
Strategy = NewType("Strategy", str)


def _default_strategies() -> list[Strategy]:
    return [Strategy(DEFAULT_STRATEGY)]


class SpecSettings(Section):
    """The benchmark spec: whom we measure, in which languages, on which domains."""

    name: str = Field(default="default", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")  # names the spec's snapshots
    targets: list[TargetSettings] = Field(default_factory=lambda: [EMBEDDED_TARGET], min_length=1)
    languages: list[str] = Field(default_factory=lambda: list(LANGS_DEFAULT), min_length=2)  # the evaluation languages
    domains: list[Domain] = Field(default_factory=lambda: list(Domain), min_length=1)  # the domains crawled and asked about
    temporal_buffer_days: int = Field(default=183, ge=0, le=3650)  # an entity must occur this long after every cutoff
    strategies: list[Strategy] = Field(default_factory=_default_strategies, min_length=1)  # names of clkt.config.strategies
    # the languages a GPU job injects in (None: every language); a subset still tests in every language
    train_languages: list[str] | None = Field(default=None, min_length=1)
    # the share of entities the temporal gate turns away that every target is asked about anyway (observing probe
    # tasks, no status change), chosen by entity id: the known-rate curve then sees months before each declared
    # cutoff (clkt.report.cutoff_curve). 0 = none, 1 = every rejected entity
    ineligible_probe_rate: float = Field(default=0.05, ge=0, le=1)
    # the training seeds: every (snapshot, target, strategy, train language) runs once per seed, and the scores are
    # pooled over them with the between-seed spread (clkt.report.seeds). A job trains with `[gpu] seed` + its seed
    # (mod 2**32: `training_seed`), so the default [0] trains exactly as one seed always did
    seeds: list[int] = Field(default_factory=lambda: [0])

    @model_validator(mode="after")
    def _train_subset(self) -> SpecSettings:
        if self.train_languages is not None:
            bad = [x for x in self.train_languages if x not in self.languages]
            if bad:
                raise ValueError(f"train_languages {bad} are not among the spec's languages {self.languages}")
            if len(set(self.train_languages)) != len(self.train_languages):
                raise ValueError("train_languages must be distinct")
        return self

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("seeds must name at least one training seed (e.g. [0])")
        bad = [x for x in v if x < 0 or x > MAX_SEED]
        if bad:
            raise ValueError(f"seeds must be integers from 0 to {MAX_SEED}, got {bad}")
        dup = sorted({x for x in v if v.count(x) > 1})
        if dup:
            raise ValueError(f"seeds must be distinct, {dup} repeated")
        return v

    @field_validator("strategies")
    @classmethod
    def _strategies(cls, v: list[Strategy]) -> list[Strategy]:
        return [Strategy(check_strategy(x)) for x in v]  # one line naming the bad value and the declared ones

    @property
    def train_langs(self) -> list[str]:
        """The languages the GPU jobs inject in (in `languages` order)."""
        chosen = set(self.train_languages or self.languages)
        return [x for x in self.languages if x in chosen]

    @field_validator("languages")
    @classmethod
    def _langs(cls, v: list[str]) -> list[str]:
        bad = [x for x in v if x not in SUPPORTED_LANGS]
        if bad:
            raise ValueError(f"unsupported language(s) {bad}; supported: {sorted(SUPPORTED_LANGS)}")
        if len(set(v)) != len(v):
            raise ValueError("languages must be distinct")
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[TargetSettings]) -> list[TargetSettings]:
        names = [t.name for t in v]
        if len(set(names)) != len(names):
            raise ValueError("target names must be distinct")
        return v
