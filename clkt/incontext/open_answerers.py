"""Who answers the in-context short-answer prompts (`clkt.incontext.open_track`): an API target through the agents'
stack (`ApiOpenAnswerer`: `clkt.openqa.generate.api_prompt_answers`, paced, cached, budgeted), or a loaded local
target in process (`LocalOpenAnswerer`: the open track's generation path, `clkt.openqa.generate.generate_prompts`,
greedy, stopped at the first line break, on the model the in-context MCQ asker holds). Both cut the answer by the
open track's stop rule and answer at most `MAX_NEW_TOKENS` tokens.

`chat`: whether the prompt ends with the chat instruction and question (API and instruct targets, one user turn)
or with the few-shot frame's answer label (a local base model: `clkt.openqa.prompts.open_text(chat=False)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from clkt import cpu_share
from clkt.incontext.prompt import estimate_tokens
from clkt.openqa.generate import ApiOpenAnswer, api_prompt_answers
from clkt.openqa.prompts import MAX_NEW_TOKENS

if TYPE_CHECKING:
    from clkt.config import TargetSettings
    from clkt.incontext.askers import LocalAsker
    from clkt.targets.api import ApiTargets

__all__ = ["ApiOpenAnswerer", "LocalOpenAnswerer", "OpenAnswerer"]


class OpenAnswerer(Protocol):
    @property
    def context_tokens(self) -> int: ...

    @property
    def chat(self) -> bool: ...

    def count(self, text: str) -> int: ...

    async def answer(self, prompts: Sequence[str]) -> list[ApiOpenAnswer | BaseException]: ...


class ApiOpenAnswerer:
    """An API target: one call per prompt through its limiter, the LLM cache and the budget."""

    def __init__(self, *, api: ApiTargets, target: TargetSettings, context_tokens: int, concurrency: int = 8,
                 max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        self.api, self.target, self.concurrency, self.max_new_tokens = api, target, concurrency, max_new_tokens
        self._context = context_tokens

    @property
    def context_tokens(self) -> int:
        return self._context

    @property
    def chat(self) -> bool:
        return True

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    async def answer(self, prompts: Sequence[str]) -> list[ApiOpenAnswer | BaseException]:
        return await api_prompt_answers(self.api, self.target, prompts, concurrency=self.concurrency,
                                        max_new_tokens=self.max_new_tokens)


class LocalOpenAnswerer:
    """A loaded local target (the MCQ track's `LocalAsker`'s model and tokenizer), in the model thread; one batch of
    `asker.batch_size` prompts at a time (no automatic size: a CPU or probe device)."""

    def __init__(self, *, asker: LocalAsker, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        self.asker, self.max_new_tokens = asker, max_new_tokens

    @property
    def context_tokens(self) -> int:
        return self.asker.context_tokens

    @property
    def chat(self) -> bool:
        return not self.asker.cue

    def count(self, text: str) -> int:
        return self.asker.count(text)

    def _generate(self, prompts: Sequence[str]) -> list[ApiOpenAnswer | BaseException]:
        from clkt.evaluate.memory import BatchSizer
        from clkt.openqa.generate import generate_prompts
        from clkt.targets.prompting import render_prompt

        cpu_share.apply_here()
        a = self.asker
        rendered = [render_prompt(a.target, a.tokenizer, p) for p in prompts]
        texts = generate_prompts(a.model, a.tokenizer, rendered, max_new_tokens=self.max_new_tokens,
                                 sizer=BatchSizer(size=a.batch_size, automatic=False, name="incontext-open"))
        return [ApiOpenAnswer(text=t, input_tokens=0, output_tokens=0, cost_usd=0.0, cached=False) for t in texts]

    async def answer(self, prompts: Sequence[str]) -> list[ApiOpenAnswer | BaseException]:
        try:
            return await cpu_share.run_model_work(self._generate, list(prompts))
        except Exception as e:  # noqa: BLE001 - the batch failed (e.g. out of memory): each prompt's failure, the track stops
            return [e] * len(prompts)
