"""The open track's jury: LLM judges grading a short answer against its gold (SimpleQA's rules), majority vote.

PoLL (Verga et al. 2024): three small judges from different families agree with humans better than one large
judge, at a fraction of the cost. So a jury is `DEFAULT_JURY_SIZE` judges by default, each a configured model
string of a different provider or family (`judge_family`, `clkt.config.jury`: two Qwen models behind two servers
are one family; `[agents.jury]` configures the jury, `JurySettings.of` reads it),
each a pydantic-ai agent whose typed output (`JudgeGrade`) is CORRECT / INCORRECT / NOT_ATTEMPTED with a reason.
The judges are asked in English (the prompt `agents/prompts/open_judge.v<N>.md`, whose version each verdict
records), with the question, the gold and its accepted forms, the question's language and the answer, every
untrusted string through `data_block()`.

Every call goes through the project's stack: `ModelFactory` wraps each judge's model in `CachedModel`
(the LLM call cache: a re-grade never pays twice; the monthly budget) around `RateLimitedModel` (the provider's
pacing, a timeout per attempt, retries of 429/5xx/timeouts up to the provider's `max_attempts`). A judge whose
output is malformed is asked again (`output_retries`, pydantic-ai's output validation); one that still gives no
verdict, errs or times out is a failed vote, counted by why (`JuryStats.failed`), never guessed. The calls of a
malformed vote are retired from the cache (`CachedModel.retire`: their cost still counted, never replayed), so
the answer's next grading (the stage's retry, after `retry_after_s`, under the budget) asks the judge again
instead of replaying the same unusable reply forever. The jury's
verdict is the grade of a strict majority of the configured judges; without one it is None (undecided, counted).
A spent budget (`BudgetExhausted`) is raised, as from every paid stage: the grading pauses.

Answers that need no judge are not sent: an empty or whitespace-only answer is NOT_ATTEMPTED at no cost. An
answer longer than `MAX_ANSWER_CHARS` is cut there (marked) before it is sent. Cost: each vote carries the price
of its calls (the configured `[agents.prices]`, else genai-prices through pydantic-ai), and `Jury.stats` what
this jury paid (cache misses) and replayed (hits).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from pydantic import BaseModel, Field
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.exceptions import AgentRunError, ModelAPIError, RunCancelled, UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model

from agents._prompting import data_block, load_prompt
from agents.cache import CachedModel, CacheStats, cost_usd, price_of, recorded_keys
from agents.factory import ModelFactory
from clkt.config.jury import DEFAULT_JURY_SIZE, JuryConfig, judge_family
from clkt.errors import AgentError, BudgetExhausted, UserError

__all__ = [
    "DEFAULT_JURY_SIZE",
    "GRADES",
    "Grade",
    "JudgeGrade",
    "JudgeVote",
    "Jury",
    "JurySettings",
    "JuryStats",
    "JuryVerdict",
    "judge_family",
    "judge_prompt",
]

Grade = Literal["CORRECT", "INCORRECT", "NOT_ATTEMPTED"]
GRADES: tuple[str, ...] = get_args(Grade)
STAGE = "open_judge"  # the call records' stage and the prompt's role
MAX_ANSWER_CHARS = 2000  # an answer is cut here before a judge reads it
MAX_ANSWER_TOKENS = 300  # a judge's reply: a verdict and one sentence

_LANG_NAMES = {"en": "English", "ja": "Japanese", "zh": "Chinese", "fr": "French", "es": "Spanish"}


class JudgeGrade(BaseModel):
    """One judge's typed output."""

    verdict: Grade
    reason: str = Field(default="", max_length=1000)


class JurySettings(JuryConfig):
    """The jury: `[agents.jury]` with at least one judge (their model strings `<provider>:<model>`, as the agent
    roles', of different families: `JuryConfig`'s rule)."""

    judges: tuple[str, ...] = Field(min_length=1, max_length=9)

    @classmethod
    def of(cls, config: JuryConfig) -> JurySettings:
        """The jury `[agents.jury]` configures (a `UserError` when it names no judge)."""
        if not config.judges:
            raise UserError("no jury is configured ([agents.jury] judges is empty)")
        return cls.model_validate(config.model_dump())


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeVote:
    judge: str
    verdict: Grade | None  # None: the judge gave no verdict (`error` says why)
    reason: str = ""
    error: str | None = None
    cost_usd: float = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class JuryVerdict:
    """The jury's grade of one answer (None: no strict majority, never guessed), its votes and prompt version."""

    verdict: Grade | None
    votes: tuple[JudgeVote, ...]
    prompt_version: str
    reason: str = ""

    @property
    def cost_usd(self) -> float:
        return sum(v.cost_usd for v in self.votes)

    @property
    def failed(self) -> int:
        return sum(v.verdict is None for v in self.votes)


@dataclass
class JuryStats:
    verdicts: Counter[str] = field(default_factory=Counter)  # CORRECT / INCORRECT / NOT_ATTEMPTED / undecided
    failed: Counter[str] = field(default_factory=Counter)  # failed votes by why: timeout, malformed, http, ...
    calls: CacheStats = field(default_factory=CacheStats)  # this jury's calls: paid (misses) and replayed (hits)


def judge_prompt(*, question: str, gold: str, aliases: Sequence[str], answer: str, lang: str) -> str:
    """The user message a judge reads (English; the untrusted strings in data blocks)."""
    if len(answer) > MAX_ANSWER_CHARS:
        answer = answer[:MAX_ANSWER_CHARS] + f" [... cut: {len(answer)} characters in all]"
    forms = "\n".join(f"- {a}" for a in aliases) or "(none)"
    return (
        f"Grade the predicted answer. The question was asked in {_LANG_NAMES.get(lang, lang)} ({lang}).\n\n"
        + data_block("question", question) + "\n\n"
        + data_block("gold", f"{gold}\n\nOther accepted forms:\n{forms}") + "\n\n"
        + data_block("answer", answer)
    )


def _why(e: BaseException) -> str:
    """A failed vote's kind, for the counts."""
    if isinstance(e, TimeoutError) or "timeout" in type(e).__name__.lower():
        return "timeout"
    if isinstance(e, UnexpectedModelBehavior):
        return "malformed"
    if isinstance(e, ModelAPIError):
        return "http"
    return "error"


def _cost(messages: Sequence[ModelMessage], model: str, factory: ModelFactory) -> float:
    price = price_of(model, factory.agents.prices)
    return sum(cost_usd(m, price) for m in messages if isinstance(m, ModelResponse))


class Jury:
    """Grades short answers with the configured judges (see the module docstring)."""

    def __init__(
        self, *, settings: JurySettings, factory: ModelFactory, raw_models: Mapping[str, Model] | None = None,
    ) -> None:
        """`raw_models` (tests): judge model string -> a pydantic-ai model (FunctionModel), still wrapped with the
        factory's limits and cache as a provider's model is."""
        self.settings = settings
        self.factory = factory
        self.prompt = load_prompt(STAGE)
        self.stats = JuryStats()
        self._agents: dict[str, Agent[None, JudgeGrade]] = {}
        self._models: dict[str, CachedModel] = {}
        for i, judge in enumerate(settings.judges):
            if raw_models is not None and judge in raw_models:
                model = factory.wrap(raw_models[judge], model=judge, provider=judge.partition(":")[0], stage=STAGE,
                                     prompt_version=self.prompt.version)
            else:
                model = factory.for_model(judge, key=f"jury.judges[{i}]", stage=STAGE,
                                          prompt_version=self.prompt.version)
            model.stats = self.stats.calls  # this jury's own paid / replayed counts
            self._models[judge] = model
            self._agents[judge] = Agent(
                model, output_type=JudgeGrade, instructions=self.prompt.instructions, name=f"{STAGE}:{judge}",
                retries={"output": settings.output_retries},
                model_settings={"temperature": 0.0, "max_tokens": MAX_ANSWER_TOKENS},
            )

    @property
    def prompt_version(self) -> str:
        return self.prompt.version

    async def grade(self, *, question: str, gold: str, aliases: Sequence[str] = (), answer: str, lang: str) -> JuryVerdict:
        """The jury's verdict on `answer` to `question` (asked in `lang`) whose gold is `gold` (+ `aliases`)."""
        if not gold.strip():
            raise UserError("a jury cannot grade against an empty gold answer")
        if not question.strip():
            raise UserError("a jury needs the question")
        if not answer.strip():
            self.stats.verdicts["NOT_ATTEMPTED"] += 1
            return JuryVerdict(verdict="NOT_ATTEMPTED", votes=(), prompt_version=self.prompt.version,
                               reason="empty answer: no judge asked")
        prompt = judge_prompt(question=question, gold=gold, aliases=aliases, answer=answer, lang=lang)
        # every judge runs to its end (a failed vote is returned, not raised); a spent budget or a cancel is raised
        # once all are back, so no judge's call is left running behind the caller
        outcomes = await asyncio.gather(*(self._vote(j, prompt) for j in self.settings.judges),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        votes = [o for o in outcomes if isinstance(o, JudgeVote)]
        verdict, reason = self._majority(votes)
        self.stats.verdicts[verdict or "undecided"] += 1
        return JuryVerdict(verdict=verdict, votes=tuple(votes), prompt_version=self.prompt.version, reason=reason)

    def _majority(self, votes: Sequence[JudgeVote]) -> tuple[Grade | None, str]:
        counts = Counter(v.verdict for v in votes if v.verdict is not None)
        need = len(self.settings.judges) // 2 + 1
        for grade, n in counts.most_common(1):
            if n >= need:
                return grade, f"{n} of {len(self.settings.judges)} judges"
        failed = sum(v.verdict is None for v in votes)
        return None, f"no majority of {len(self.settings.judges)} ({dict(counts)}, {failed} failed)"

    async def _vote(self, judge: str, prompt: str) -> JudgeVote:
        with capture_run_messages() as messages, recorded_keys() as keys:
            try:
                result = await self._agents[judge].run(prompt)
            except (BudgetExhausted, RunCancelled):  # a spent budget pauses the grading; a cancel is no failure
                raise
            except (AgentRunError, ModelAPIError, AgentError, TimeoutError) as e:
                why = _why(e)
                self.stats.failed[why] += 1
                if why == "malformed":  # its replies are never replayed: the next grading asks again
                    await self._models[judge].retire(keys)
                return JudgeVote(judge=judge, verdict=None, error=f"{why}: {e}"[:300],
                                 cost_usd=_cost(messages, judge, self.factory))
        return JudgeVote(judge=judge, verdict=result.output.verdict, reason=result.output.reason,
                         cost_usd=_cost(result.all_messages(), judge, self.factory))
