"""`[agents.jury]`: the open track's jury of LLM judges (issue 47), and the family rule of its judges.

A jury grades every stored open answer beside the normaliser (`agents.jury`, run by the daemon's `open-jury`
stage: `clkt.openqa.jury_stage`). It is off unless judges are named: `judges = []` (the default) changes nothing.

    [agents.jury]
    judges = ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest", "vllm:Qwen/Qwen2.5-7B-Instruct"]

Each judge is a `<provider>:<model>` string resolved like an agent role's model (`[agents.providers]`, the key
in the environment, the monthly budget and prices of `[agents]`). PoLL's jury is three judges of different
families: judges of one family (`judge_family`) are refused unless `allow_same_family = true`; a jury of fewer
than `DEFAULT_JURY_SIZE` judges is accepted with a warning (`JuryConfig.size_warning`, logged at load): one or two
judges are a jury only in name (two can only agree or be undecided).

The family rule lives here, in the configuration's kernel, so the config refuses a bad jury at load and
`agents.jury` applies the same rule to the judges it is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from pydantic import Field, field_validator, model_validator

from clkt.config._base import Section

__all__ = ["DEFAULT_JURY_SIZE", "JuryConfig", "judge_family", "judge_problem"]

DEFAULT_JURY_SIZE = 3
# family markers in a model's name, for servers that host several families (vLLM, Ollama, a gateway)
_FAMILIES = ("qwen", "llama", "gemma", "mistral", "mixtral", "phi", "deepseek", "gpt", "claude", "command",
             "granite", "olmo", "smollm", "glm", "yi", "falcon", "internlm", "aya", "nemotron", "gemini")
_FAMILY_ALIASES = {"mixtral": "mistral", "gpt": "openai", "claude": "anthropic", "command": "cohere",
                   "aya": "cohere"}
_JUDGE = re.compile(r"[\w.-]+:\S+")


def judge_family(model: str) -> str:
    """The family of a judge's model string: the hosted provider (openai, anthropic), else the family its name
    names (`myvllm:Qwen2.5-7B-Instruct` -> qwen), else the name's first part."""
    provider, _, name = model.partition(":")
    if provider in ("openai", "anthropic"):
        return provider
    low = name.casefold().rsplit("/", 1)[-1]
    for family in _FAMILIES:
        if re.match(rf"{family}(?![a-z])", low) or re.search(rf"[^a-z]{family}(?![a-z])", low):
            return _FAMILY_ALIASES.get(family, family)
    return re.split(r"[-_.:\d]", low, maxsplit=1)[0] or low


def judge_problem(judges: Sequence[str], *, allow_same_family: bool) -> str | None:
    """Why `judges` is not a jury (a malformed model string, a judge named twice, two of one family), or None."""
    bad = [j for j in judges if not _JUDGE.fullmatch(j)]
    if bad:
        return f"judges must be '<provider>:<model>' strings, got {bad}"
    if len(set(judges)) != len(judges):
        return f"a judge is named twice in {list(judges)}"
    families = Counter(judge_family(j) for j in judges)
    same = sorted(f for f, n in families.items() if n > 1)
    if same and not allow_same_family:
        return (f"judges of one family {same}: a jury's judges come from different providers or families (PoLL); "
                "set allow_same_family = true to accept them")
    return None


class JuryConfig(Section):
    """`[agents.jury]`: see the module."""

    judges: tuple[str, ...] = Field(default=(), max_length=9)  # empty: no jury (the default)
    allow_same_family: bool = False
    output_retries: int = Field(default=2, ge=0, le=10)  # a judge is asked again after a malformed or missing verdict
    # passes that grade one answer: a pass with a failed vote (timeout, malformed, HTTP error) is retried on a later
    # pass until this many, under the budget; then the failed vote stays failed (stored with its reason)
    max_attempts: int = Field(default=3, ge=1, le=20)
    # a failed vote is graded again only this long after its last try (a provider outage would otherwise spend
    # every attempt within seconds of each other, one per poll)
    retry_after_s: float = Field(default=900.0, ge=0.0, le=7 * 86400.0)
    batch_size: int = Field(default=64, ge=1, le=10_000)  # answers read and written per transaction
    concurrency: int = Field(default=4, ge=1, le=256)  # answers graded at once (each asks every judge)

    @field_validator("judges")
    @classmethod
    def _shape(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        problem = judge_problem(v, allow_same_family=True)
        if problem:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _families(self) -> JuryConfig:
        problem = judge_problem(self.judges, allow_same_family=self.allow_same_family)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.judges)

    def size_warning(self) -> str | None:
        """The warning to give for a jury of fewer than `DEFAULT_JURY_SIZE` judges (None: none, or no jury)."""
        if not self.judges or len(self.judges) >= DEFAULT_JURY_SIZE:
            return None
        return (f"agents.jury has {len(self.judges)} judge(s): a jury is {DEFAULT_JURY_SIZE} judges of different "
                "families by default (PoLL); with fewer, one judge's error decides a verdict or leaves it undecided")
