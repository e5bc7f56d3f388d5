"""Greedy open answers: a local target through the evaluation's generation path, an API target through the agents'.

`generate_answers` renders each question with `clkt.openqa.prompts.render_open` and decodes it greedily
(temperature 0) through the evaluation's generation path: `clkt.evaluate.decoding.generate_continuous` (rows leave
the batch once done, new ones join, shared prompt prefixes run once) with the open track's stop rule as its stop
predicate (`line_done`: a line break after the answer began; the MCQ letter parser it uses by default would stop an
open answer at its first capital letter), or the token budget; where the model does not allow it (a sliding window
shorter than the rows) or `continuous=False`, static batches sorted by length with the evaluation's `BatchSizer` (an
out-of-memory error halves an automatic size and runs the batch again), left-padded encoding
(`clkt.targets.prompting.encode_left_padded`) and the same rule as a stopping criterion (`LineStop`). Both give
the same answers (a test holds them equal); every completion is cut by `prompts.cut`.

`api_answers`: an API target answers the chat prompt (`open_text(chat=True)`) through `clkt.targets.api.ApiTargets`,
the in-context track's way (paced by the provider's limiter, cached, budgeted, priced), cut by the same stop rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clkt.evaluate.decoding import generate_continuous, supports_continuous
from clkt.evaluate.memory import BatchSizer
from clkt.openqa.prompts import MAX_NEW_TOKENS, cut, open_text, render_open
from clkt.targets.prompting import RenderedPrompt, encode_left_padded

if TYPE_CHECKING:
    from clkt.config import TargetSettings
    from clkt.targets.api import ApiTargets

__all__ = ["STAGE", "ApiOpenAnswer", "OpenPrompt", "api_answers", "api_prompt_answers", "generate_answers", "generate_prompts", "line_done"]

STAGE = "open_answer"  # the call records' stage of an API target's open answers


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenPrompt:
    question: str
    lang: str


def line_done(completion: str) -> bool:
    """The stop rule on a completion so far: a line break after the answer began (`prompts.cut` keeps what is
    before it)."""
    return "\n" in completion.lstrip()


def _line_stop(tokenizer: Any, prompt_len: int) -> Any:
    """A stopping criterion: each row is done once its completion has a line break after some text."""
    import torch
    from transformers import StoppingCriteria

    class LineStop(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            texts = tokenizer.batch_decode(input_ids[:, prompt_len:], skip_special_tokens=True)
            done = [line_done(t) for t in texts]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return LineStop()


def generate_prompts(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, sizer: BatchSizer,
    max_new_tokens: int = MAX_NEW_TOKENS, progress: Callable[[int], None] | None = None, continuous: bool = True,
) -> list[str]:
    """The greedy completion of each rendered prompt (input order), cut by the stop rule."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    lengths = [len(tokenizer.encode(p.text, add_special_tokens=p.add_special_tokens)) for p in prompts]
    if not prompts:
        return []
    if continuous and supports_continuous(model, longest=max(lengths) + max_new_tokens):
        texts = generate_continuous(model, tokenizer, prompts, sizer=sizer, max_new_tokens=max_new_tokens,
                                    progress=progress, stop=line_done)
        return [cut(t) for t in texts]
    return _generate_static(model, tokenizer, prompts, lengths, sizer=sizer, max_new_tokens=max_new_tokens,
                            progress=progress)


def _generate_static(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], lengths: list[int], *, sizer: BatchSizer,
    max_new_tokens: int, progress: Callable[[int], None] | None,
) -> list[str]:
    import torch

    order = sorted(range(len(prompts)), key=lambda i: lengths[i])
    out: list[str] = [""] * len(prompts)

    def run(idx: list[int]) -> None:
        batch = encode_left_padded(tokenizer, [prompts[i] for i in idx]).to(model.device)
        plen = batch["input_ids"].shape[1]
        gen = model.generate(
            **batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id,
            temperature=None, top_p=None, top_k=None, stopping_criteria=[_line_stop(tokenizer, plen)],
        )
        for i, text in zip(idx, tokenizer.batch_decode(gen[:, plen:], skip_special_tokens=True), strict=True):
            out[i] = cut(text)

    def done(idx: list[int], _result: None) -> None:
        if progress is not None:
            progress(len(idx))

    with torch.inference_mode():
        sizer.run(order, run, on_done=done)
    return out


def generate_answers(
    model: Any, tokenizer: Any, target: TargetSettings, questions: Sequence[OpenPrompt], *, sizer: BatchSizer,
    max_new_tokens: int = MAX_NEW_TOKENS, progress: Callable[[int], None] | None = None, continuous: bool = True,
) -> list[str]:
    """Each question's greedy answer by the target (the prompt of its kind), cut by the stop rule."""
    prompts = [render_open(target, tokenizer, q.question, q.lang) for q in questions]
    return generate_prompts(model, tokenizer, prompts, sizer=sizer, max_new_tokens=max_new_tokens, progress=progress,
                            continuous=continuous)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiOpenAnswer:
    """An API target's answer: the text cut by the stop rule, and the call's tokens, price and cache hit."""

    text: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached: bool


async def api_answers(
    api: ApiTargets, target: TargetSettings, questions: Sequence[OpenPrompt], *, concurrency: int = 8,
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> list[ApiOpenAnswer | BaseException]:
    """Each question's answer by an API target at temperature 0, the chat prompt as its user message (`api_prompt_answers`)."""
    texts = [open_text(q.question, q.lang, chat=True) for q in questions]
    return await api_prompt_answers(api, target, texts, concurrency=concurrency, max_new_tokens=max_new_tokens)


async def api_prompt_answers(
    api: ApiTargets, target: TargetSettings, prompts: Sequence[str], *, concurrency: int = 8,
    max_new_tokens: int = MAX_NEW_TOKENS, stage: str = STAGE,
) -> list[ApiOpenAnswer | BaseException]:
    """Each prompt's answer by an API target at temperature 0, the prompt as its user message, through the agents'
    stack (`ApiTargets.ask`: the provider's limiter, the LLM cache, the budget; `stage`), at most `concurrency` at
    once, cut by the stop rule. A failed call is returned as its exception, the others kept."""
    sem = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> ApiOpenAnswer:
        async with sem:
            a = await api.ask(target, prompt, max_tokens=max_new_tokens, stage=stage)
        return ApiOpenAnswer(text=cut(a.text), input_tokens=a.input_tokens, output_tokens=a.output_tokens,
                             cost_usd=a.cost_usd, cached=a.cached)

    return list(await asyncio.gather(*(one(p) for p in prompts), return_exceptions=True))
