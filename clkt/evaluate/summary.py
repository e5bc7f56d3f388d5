"""The typed summary of a finished GPU job, as `gpu_jobs.summary` keeps it and every reader reads it.

The job process (`clkt.inject.job.InjectionJob.summarise`) fills what it measured: the question counts, the
accuracy of each variant x result scorer (and the share of `generate` answers without a letter), Learn per
result scorer on the train language's test questions and on the control split's, the training speed,
where a rerun resumed and, when the snapshot has a locality split, its paired counts per scorer and language
(`locality`: what the injection kept of what the target knew). The consumer adds, before storing it, the epochs, the target's identity and the
control split's paired counts per scorer and language (control questions have no store rows).

`JobSummary.from_stored(raw)` reads both shapes a store may hold: this one, and the flat dict that versions
before it wrote (`"base:generate:accuracy"`, `"learn:<scorer>:p_value"`, `"learn-control:…"`, `"scorers":
"a,b"`), converted field by field without recomputing anything; `{}` (a job not finished) is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clkt.evaluate.results import EpochRecord, Variant

__all__ = ["ControlCounts", "EntityKept", "JobSummary", "LearnSummary", "LocalityCounts", "ScorerScore"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScorerScore(_Model):
    """One variant x result scorer over the job's real test questions (every language)."""

    variant: Variant
    scorer: str
    accuracy: float | None  # None: no answers
    parse_failure_rate: float | None = None  # `generate` only: the share of answers with no letter


class LearnSummary(_Model):
    """Learn of one result scorer (`clkt.report.learn.LearnStat`, as numbers): the train language's questions
    answered by both the base and the injected model."""

    n: int
    base_accuracy: float | None
    injected_accuracy: float | None
    gain: float | None
    gained: int  # wrong before, right after
    lost: int  # right before, wrong after
    p_value: float  # exact two-sided McNemar
    learned: bool


class ControlCounts(_Model):
    """The control split's paired answers of one scorer in one test language."""

    n: int
    base_correct: int
    injected_correct: int
    gained: int  # base wrong, injected right
    lost: int  # base right, injected wrong


class EntityKept(_Model):
    """One locality entity's share of `LocalityCounts`: its questions right before, and those still right after."""

    entity: int  # public entity id
    base_right: int
    kept: int


class LocalityCounts(_Model):
    """The locality split's paired answers of one scorer in one test language: questions about entities the
    target knew before injection, answered by the base and the injected model (`clkt.evaluate.locality`).
    Kept % = kept / (kept + lost); `entities` lets the report draw its interval over entities."""

    n: int  # questions answered by both
    kept: int  # right before, right after
    lost: int  # right before, wrong after
    gained: int  # wrong before, right after
    entities: list[EntityKept] = Field(default_factory=list)  # per entity with a question right before, by id

    @property
    def base_right(self) -> int:
        return self.kept + self.lost


class JobSummary(_Model):
    # --- measured by the job process
    selection_scorer: str  # the scorer that chose the best epoch
    scorers: list[str]  # the result scorers, sorted (`option-loglik` also gives `option-loglik-norm`)
    generate_parse: str | None = None  # how `generate` read the letters ("strict", "reference"); None: no generate
    val_questions: int = 0
    test_questions: int = 0  # the real ones, every language (the control split's apart)
    control_questions: int = 0
    train_examples: int = 0
    train_tokens_per_s: float | None = None
    # what the examples came from, entities counted (an editing job: {"facts": n, "documents": m}); left out when empty
    train_sources: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v)
    resumed_after_epoch: int = 0  # 0: trained from the start
    scores: list[ScorerScore] = Field(default_factory=list)  # base then injected, scorers sorted
    learn: dict[str, LearnSummary] = Field(default_factory=dict)  # result scorer -> Learn (real test questions)
    learn_control: dict[str, LearnSummary] = Field(default_factory=dict)  # ... on the control split
    eval_batch_sizes: dict[str, int] = Field(default_factory=dict)  # scorer -> the evaluation batch size it ran at
    # the open track's pass (`clkt.inject.open_pass`): questions x languages asked per variant, and its seconds
    open_questions: int = Field(default=0, exclude_if=lambda v: not v)
    open_answer_s: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # the open track's checkpoint (`clkt.inject.open_val`): the train language's open validation questions asked
    # per epoch, and the epoch chosen on them (None: not chosen apart, the MCQ track's answers the open pass)
    open_val_questions: int = Field(default=0, exclude_if=lambda v: not v)
    open_epoch: int | None = Field(default=None, exclude_if=lambda v: v is None)
    ran_on: str | None = None  # where the job process ran: this machine ("local") or a cluster node ("ray:<node>")
    # what the job cost (`clkt.inject.usage`; None: not recorded, as by versions before it)
    wall_s: float | None = None  # the job process's run: loading the snapshot to the summary
    inject_s: float | None = None  # the strategy's injection step alone
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None  # "cuda" (torch's peak allocation on the device) or "rss" (the process's peak)
    # --- added by the consumer on completion
    epochs: list[EpochRecord] = Field(default_factory=list)
    target_family: str | None = None
    target_size_b: float | None = None
    target_model_id: str | None = None
    control: dict[str, dict[str, ControlCounts]] = Field(default_factory=dict)  # scorer -> test language -> counts
    # --- the locality split (measured by the job process; left out of the stored summary when the snapshot has none)
    locality_questions: int = Field(default=0, exclude_if=lambda v: not v)  # every language
    locality: dict[str, dict[str, LocalityCounts]] = Field(default_factory=dict, exclude_if=lambda v: not v)

    def score(self, variant: Variant, scorer: str) -> ScorerScore | None:
        return next((s for s in self.scores if s.variant is variant and s.scorer == scorer), None)

    @classmethod
    def from_stored(cls, raw: Mapping[str, Any] | None) -> JobSummary | None:
        """The stored summary (either shape); None for the empty summary of a job that has not finished."""
        if not raw:
            return None
        return cls.model_validate(dict(raw))

    @model_validator(mode="before")
    @classmethod
    def _read_flat(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "scores" not in data and "selection_scorer" in data:
            return _from_flat(data)
        return data


_LEARN_FIELDS = tuple(LearnSummary.model_fields)
_KEPT = ("selection_scorer", "generate_parse", "val_questions", "test_questions", "control_questions", "train_examples",
         "train_tokens_per_s", "resumed_after_epoch", "epochs", "target_family", "target_size_b", "target_model_id", "control")


def _from_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The flat summary of earlier versions, as this model's fields (values kept as they were stored)."""
    out: dict[str, Any] = {k: flat[k] for k in _KEPT if k in flat}
    raw_scorers = flat.get("scorers") or ""
    out["scorers"] = [s for s in str(raw_scorers).split(",") if s] if isinstance(raw_scorers, str) else list(raw_scorers)
    scores: dict[tuple[int, str], dict[str, Any]] = {}
    learn: dict[str, dict[str, dict[str, Any]]] = {"learn": {}, "learn-control": {}}
    for key, value in flat.items():
        head, _, rest = key.partition(":")
        scorer, _, name = rest.rpartition(":")
        if not scorer:
            continue
        if head in ("base", "injected") and name in ("accuracy", "parse_failure_rate"):
            order = 0 if head == "base" else 1
            scores.setdefault((order, scorer), {"variant": head, "scorer": scorer, "accuracy": None})[name] = value
        elif head in learn and name in _LEARN_FIELDS:
            learn[head].setdefault(scorer, {})[name] = value
    out["scores"] = [scores[k] for k in sorted(scores)]
    out["learn"] = learn["learn"]
    out["learn_control"] = learn["learn-control"]
    return out
