"""Who answers the in-context track's prompts: an API target through the agents' model stack (`ApiAsker`), or a
local target in process through the GPU side's scorers (`LocalAsker`). Both answer at temperature 0.

The scorer is the one the target's parametric jobs are headlined with (`incontext_scorer`): an API target and a
local instruct target generate and the paper's parse reads the letter (`clkt.evaluate.parse`; no letter = wrong);
a local base target is scored by `option-loglik-norm` (`clkt.evaluate.loglik`: each option's text after the
document, the question and the answer cue; every answer has a letter), as its parametric jobs are. A base model
does not answer with a letter: under the generate parse most of its answers would be unparsed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from clkt import cpu_share
from clkt.evaluate.parse import ParseMode, parse_letter
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM, ScorerName, scorers_for
from clkt.incontext.prompt import document_block, estimate_tokens

if TYPE_CHECKING:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.targets.api import ApiTargets

__all__ = ["DEFAULT_API_CONTEXT", "GENERATE", "ApiAsker", "Ask", "Asker", "LocalAsker", "Reply", "incontext_scorer"]

GENERATE = ScorerName.generate.value

DEFAULT_API_CONTEXT = 8192  # an API target's context when it declares none (`context_tokens`): safe for any model
_LOCAL_MAX_CONTEXT = 1_000_000  # a tokenizer's model_max_length above this is transformers' "unknown"


def incontext_scorer(target: TargetSettings, gpu: GpuSettings) -> str:
    """A local target's in-context scorer: `option-loglik-norm` (the report's headline for base targets) when its
    parametric jobs run `option-loglik` (`clkt.evaluate.scorers.scorers_for`) and it is not an instruct model that
    also generates; else `generate`. API targets always generate."""
    scorers = scorers_for(target, gpu)
    if ScorerName.option_loglik.value in scorers and not (target.kind == "instruct" and GENERATE in scorers):
        return OPTION_LOGLIK_NORM
    return GENERATE


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """One prompt of the track: its whole text (the MCQ prompt, `clkt.incontext.prompt`), and its parts for the
    option scorer: the document as it is in the prompt (None: the floor), the question, its options, its language."""

    prompt: str
    document: str | None
    question: str
    options: tuple[str, ...]
    lang: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    text: str
    letter: str | None  # None: the answer states no letter (scored wrong, counted)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Asker(Protocol):
    """Answers a target's prompts (in order). `cue`: whether the prompt ends with the answer cue (base models);
    `scorer`: what scores the answers (`generate` or `option-loglik-norm`), stored with each."""

    @property
    def context_tokens(self) -> int: ...

    @property
    def cue(self) -> bool: ...

    @property
    def scorer(self) -> str: ...

    def count(self, text: str) -> int: ...

    async def ask(self, asks: Sequence[Ask]) -> list[Reply | BaseException]: ...


class ApiAsker:
    """An API target (`backend = "api"`), one call per prompt through its limiter, the LLM cache and the budget,
    at most `concurrency` at once. A failed call is returned as its exception (the others are kept). With `batch`
    (`[agents] mode` or `stage_modes.incontext` = "batch") each call goes through the provider's batch API at its
    batch price: a call not yet answered is returned as `agents.batch.BatchPending` (queued, or waiting in a batch)."""

    def __init__(
        self, *, api: ApiTargets, target: TargetSettings, max_new_tokens: int, parse: ParseMode = "strict",
        concurrency: int = 8, batch: bool = False,
    ) -> None:
        self.api = api
        self.target = target
        self.max_new_tokens = max_new_tokens
        self.parse = parse
        self.batch = batch
        self._sem = asyncio.Semaphore(concurrency)

    @property
    def context_tokens(self) -> int:
        return self.target.context_tokens or DEFAULT_API_CONTEXT

    @property
    def cue(self) -> bool:
        return False  # one user turn: the chat model answers it

    @property
    def scorer(self) -> str:
        return GENERATE

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    async def _one(self, prompt: str) -> Reply:
        async with self._sem:
            a = await self.api.ask(self.target, prompt, max_tokens=self.max_new_tokens, stage="incontext",
                                   batch=self.batch)
        return Reply(text=a.text, letter=parse_letter(a.text, self.parse), input_tokens=a.input_tokens,
                     output_tokens=a.output_tokens, cost_usd=a.cost_usd)

    async def ask(self, asks: Sequence[Ask]) -> list[Reply | BaseException]:
        return list(await asyncio.gather(*(self._one(a.prompt) for a in asks), return_exceptions=True))


class LocalAsker:
    """A loaded local target, in a worker thread: the generate scorer (`clkt.evaluate.scorers.score_generate`) over
    the prompts, rendered through the target's chat template when it is an instruct model; or, with `scorer` =
    `option-loglik-norm`, `clkt.evaluate.loglik.score_option_loglik` (its options share the context's pass)."""

    def __init__(
        self, *, model: Any, tokenizer: Any, target: TargetSettings, max_new_tokens: int, parse: ParseMode = "strict",
        batch_size: int = 8, scorer: str = GENERATE,
    ) -> None:
        if scorer not in (GENERATE, OPTION_LOGLIK_NORM):
            raise ValueError(f"the in-context track scores with {GENERATE} or {OPTION_LOGLIK_NORM}, not {scorer!r}")
        from clkt.targets.prompting import uses_chat_template

        self.model = model
        self.tokenizer = tokenizer
        self.target = target
        self.max_new_tokens = max_new_tokens
        self.parse = parse
        self.batch_size = batch_size
        self._scorer = scorer
        self._chat = uses_chat_template(target, tokenizer)
        self._model_lock = asyncio.Lock()  # one batch on the model at a time (the track asks a chunk ahead)

    @property
    def context_tokens(self) -> int:
        if self.target.context_tokens:
            return self.target.context_tokens
        n = int(getattr(self.tokenizer, "model_max_length", 0) or 0)
        if 0 < n <= _LOCAL_MAX_CONTEXT:
            return n
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    @property
    def cue(self) -> bool:
        return not self._chat

    @property
    def scorer(self) -> str:
        return self._scorer

    def count(self, text: str) -> int:
        from clkt.targets.prompting import render_prompt

        r = render_prompt(self.target, self.tokenizer, text)
        return len(self.tokenizer(r.text, add_special_tokens=r.add_special_tokens)["input_ids"])

    def _score(self, asks: Sequence[Ask]) -> list[Reply | BaseException]:
        cpu_share.apply_here()  # the cores a GPU job on this machine's CPU leaves
        if self._scorer == OPTION_LOGLIK_NORM:
            return self._loglik(asks)
        from clkt.evaluate.scorers import score_generate
        from clkt.targets.prompting import render_prompt

        rendered = [render_prompt(self.target, self.tokenizer, a.prompt) for a in asks]
        scored = score_generate(
            self.model, self.tokenizer, rendered, batch_size=self.batch_size, max_new_tokens=self.max_new_tokens,
            parse=self.parse,
        )
        return [Reply(text=s.raw, letter=s.predicted) for s in scored]

    def _loglik(self, asks: Sequence[Ask]) -> list[Reply | BaseException]:
        """acc_norm of the parametric jobs' option scorer, the document block before the question."""
        from clkt.evaluate.loglik import loglik_item, score_option_loglik

        items = [loglik_item(self.target, self.tokenizer, a.question, a.options, a.lang,
                             prefix=document_block(a.document)) for a in asks]
        scored = score_option_loglik(self.model, self.tokenizer, items, batch_size=self.batch_size)
        return [Reply(text=s.raw, letter=s.acc_norm) for s in scored]

    async def ask(self, asks: Sequence[Ask]) -> list[Reply | BaseException]:
        async with self._model_lock:
            return await cpu_share.run_model_work(self._score, list(asks))
