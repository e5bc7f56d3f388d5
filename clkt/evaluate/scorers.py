"""The scorers of a multiple-choice question, all at temperature 0.

- `option-loglik` (`clkt.evaluate.loglik`): the log-likelihood of each option's text after the question,
  lm-eval's `acc`, reported together with `acc_norm` as the result scorer `option-loglik-norm`. The default
  for base models.
- `generate`: the paper's protocol, the default for instruct models. Greedy generation after the question and
  its lettered options (batched, left padding), the letter parsed by `gpu.parse` (`strict`, or `reference`:
  the reference code's rule); unparseable = wrong. A row stops generating as soon as its letter is decided
  (`letter_decided`): the tokens after it cannot change the answer. Decided rows leave the batch and queued
  prompts take their place (`clkt.evaluate.decoding`); models it cannot serve run in static batches, each
  until its slowest row is done.
- `letter-logprob`: one forward pass per prompt, keeping only the last position's logits (left padding puts
  every prompt's last token there, and position ids follow the attention mask), then the highest-scoring of
  the four letters. A letter may be spelled by several tokens ("A" and " A"); its score is the best of them.

Both sort prompts by length before batching (less padding) and return answers in the input order. The batch
size comes from a `BatchSizer` (`clkt.evaluate.memory`): configured, or found automatically, halving on an
out-of-memory error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from clkt.evaluate.decoding import generate_continuous, supports_continuous
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.parse import ParseMode, letter_decided, parse_letter
from clkt.evaluate.prompts import LETTERS
from clkt.targets.prompting import RenderedPrompt, encode_left_padded

if TYPE_CHECKING:
    from clkt.config import GpuSettings, TargetSettings

__all__ = [
    "OPTION_LOGLIK_NORM",
    "Scored",
    "ScorerName",
    "letter_token_ids",
    "score_generate",
    "score_letter_logprob",
    "score_prompts",
    "scorers_for",
    "selection_scorer",
]

OPTION_LOGLIK_NORM = "option-loglik-norm"  # the result rows of `option-loglik`'s acc_norm

Progress = Callable[[int], None]


class ScorerName(str, Enum):
    option_loglik = "option-loglik"
    generate = "generate"
    letter_logprob = "letter-logprob"


BY_KIND: dict[str, list[str]] = {"base": [ScorerName.option_loglik.value], "instruct": [ScorerName.generate.value]}


def scorers_for(target: TargetSettings, gpu: GpuSettings) -> list[str]:
    """The configured scorers of a target: its own `scorers`, else `[gpu] scorers`, else by its kind."""
    chosen = target.scorers or gpu.scorers or BY_KIND[target.kind]
    return [ScorerName(s).value for s in dict.fromkeys(chosen)]


def selection_scorer(scorers: Sequence[str]) -> str:
    """The scorer that picks the best epoch: option-loglik (acc) when run, else letter-logprob, else the first."""
    for pref in (ScorerName.option_loglik.value, ScorerName.letter_logprob.value):
        if pref in scorers:
            return pref
    return scorers[0]


@dataclass(frozen=True, slots=True)
class Scored:
    predicted: str | None  # None: the completion states no letter (generate only)
    raw: str  # the completion (generate) or the four letter log-probs (letter-logprob)


def letter_token_ids(tokenizer: Any) -> list[list[int]]:
    """For A–D, every single token that spells the letter (bare, and with a leading space)."""
    out: list[list[int]] = []
    for letter in LETTERS:
        ids: set[int] = set()
        for variant in (letter, " " + letter):
            enc = tokenizer.encode(variant, add_special_tokens=False)
            if len(enc) == 1:
                ids.add(int(enc[0]))
        if not ids:
            raise ValueError(f"the tokenizer has no single token for the letter {letter!r}")
        out.append(sorted(ids))
    return out


def _lengths(prompts: Sequence[RenderedPrompt], tokenizer: Any) -> list[int]:
    return [len(tokenizer.encode(p.text, add_special_tokens=p.add_special_tokens)) for p in prompts]


def _order(prompts: Sequence[RenderedPrompt], tokenizer: Any) -> list[int]:
    lengths = _lengths(prompts, tokenizer)
    return sorted(range(len(prompts)), key=lambda i: lengths[i])


def _batches(prompts: Sequence[RenderedPrompt], tokenizer: Any, batch_size: int) -> list[list[int]]:
    order = _order(prompts, tokenizer)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _sizer(sizer: BatchSizer | None, batch_size: int) -> BatchSizer:
    return sizer if sizer is not None else BatchSizer(size=batch_size, automatic=False)


def _positions(mask: Any) -> Any:
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def score_letter_logprob(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, batch_size: int = 8,
    max_length: int | None = None, progress: Progress | None = None, sizer: BatchSizer | None = None,
) -> list[Scored]:
    import torch

    letters = letter_token_ids(tokenizer)
    flat = torch.tensor([t for ids in letters for t in ids])
    owner = torch.tensor([k for k, ids in enumerate(letters) for _ in ids])
    out: list[Scored | None] = [None] * len(prompts)

    def run(idx: list[int]) -> None:
        batch = encode_left_padded(tokenizer, [prompts[i] for i in idx], max_length=max_length).to(model.device)
        kwargs = dict(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            position_ids=_positions(batch["attention_mask"]), use_cache=False,
        )
        try:  # only the last position's logits: the LM head over the vocabulary dominates small models
            logits = model(**kwargs, logits_to_keep=1).logits[:, -1, :].float()
        except TypeError:  # a model class without `logits_to_keep`
            logits = model(**kwargs).logits[:, -1, :].float()
        logp = torch.log_softmax(logits, dim=-1)[:, flat.to(logits.device)].cpu()
        best = torch.full((len(idx), len(LETTERS)), float("-inf"))
        best = best.scatter_reduce(1, owner.expand(len(idx), -1), logp, reduce="amax")
        for row, i in enumerate(idx):
            k = int(best[row].argmax())
            out[i] = Scored(LETTERS[k], " ".join(f"{LETTERS[j]}={best[row, j]:.3f}" for j in range(len(LETTERS))))

    with torch.inference_mode():
        _sizer(sizer, batch_size).run(_order(prompts, tokenizer), run, on_done=lambda idx, _: _tick(progress, len(idx)))
    return [s for s in out if s is not None]


def _tick(progress: Progress | None, n: int) -> None:
    if progress is not None:
        progress(n)


def _letter_stop(tokenizer: Any, prompt_len: int, mode: ParseMode) -> Any:
    """A stopping criterion that ends each row once its completion's letter is decided."""
    from transformers import StoppingCriteria

    class LetterDecided(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            texts = tokenizer.batch_decode(input_ids[:, prompt_len:], skip_special_tokens=True)
            return torch.tensor([letter_decided(t, mode) for t in texts], dtype=torch.bool, device=input_ids.device)

    return LetterDecided()


def score_generate(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, batch_size: int = 8,
    max_new_tokens: int = 64, max_length: int | None = None, progress: Progress | None = None,
    parse: ParseMode = "strict", stop_early: bool = True, continuous: bool = True, sizer: BatchSizer | None = None,
    share_prefixes: bool = True,
) -> list[Scored]:
    """Greedy completions and their letters. `continuous` (with `stop_early`): decided rows leave the batch and
    queued prompts join it (`clkt.evaluate.decoding`), where the model allows, and prompts' shared first tokens
    run once (`share_prefixes`); else static batches."""
    sizer = _sizer(sizer, batch_size)
    if not prompts:
        return []
    if continuous and stop_early:
        longest = max(_lengths(prompts, tokenizer)) + max_new_tokens
        if max_length is not None:
            longest = min(longest, max_length + max_new_tokens)
        if supports_continuous(model, longest=longest):
            texts = generate_continuous(
                model, tokenizer, prompts, sizer=sizer, max_new_tokens=max_new_tokens, max_length=max_length,
                parse=parse, progress=progress, share_prefixes=share_prefixes,
            )
            return [Scored(parse_letter(t, parse), t) for t in texts]
    return _generate_static(model, tokenizer, prompts, sizer=sizer, max_new_tokens=max_new_tokens, max_length=max_length,
                            progress=progress, parse=parse, stop_early=stop_early)


def _generate_static(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, sizer: BatchSizer, max_new_tokens: int,
    max_length: int | None, progress: Progress | None, parse: ParseMode, stop_early: bool,
) -> list[Scored]:
    """Batches of prompts sorted by length, each generated until its slowest row is done."""
    import torch
    from transformers import StoppingCriteriaList

    out: list[Scored | None] = [None] * len(prompts)

    def run(idx: list[int]) -> None:
        batch = encode_left_padded(tokenizer, [prompts[i] for i in idx], max_length=max_length).to(model.device)
        plen = batch["input_ids"].shape[1]
        stops = StoppingCriteriaList([_letter_stop(tokenizer, plen, parse)]) if stop_early else None
        gen = model.generate(
            **batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id,
            temperature=None, top_p=None, top_k=None, stopping_criteria=stops,
        )
        texts = tokenizer.batch_decode(gen[:, plen:], skip_special_tokens=True)
        for i, text in zip(idx, texts, strict=True):
            out[i] = Scored(parse_letter(text, parse), text)

    with torch.inference_mode():
        sizer.run(_order(prompts, tokenizer), run, on_done=lambda idx, _: _tick(progress, len(idx)))
    return [s for s in out if s is not None]


def score_prompts(
    scorer: ScorerName | str, model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, batch_size: int,
    max_new_tokens: int, max_length: int | None = None, progress: Progress | None = None, parse: ParseMode = "strict",
    sizer: BatchSizer | None = None,
) -> list[Scored]:
    """The letter scorers over rendered MCQ prompts (`option-loglik` scores rows: `clkt.evaluate.loglik`)."""
    name = ScorerName(scorer)
    if name is ScorerName.option_loglik:
        raise ValueError("option-loglik scores question rows, not MCQ prompts: use clkt.evaluate.loglik")
    if name is ScorerName.generate:
        return score_generate(
            model, tokenizer, prompts, batch_size=batch_size, max_new_tokens=max_new_tokens, max_length=max_length,
            progress=progress, parse=parse, sizer=sizer,
        )
    return score_letter_logprob(model, tokenizer, prompts, batch_size=batch_size, max_length=max_length, progress=progress,
                                sizer=sizer)
