"""`option-loglik`: the scorer for base models (lm-evaluation-harness's `multiple_choice` `acc` / `acc_norm`).

Each option's text is scored as the continuation of the question: the summed log-likelihood of its tokens
after the context `<question>\\n<answer cue>` (plain text for base models; the chat template's user turn
for instruct models). `acc` takes the option with the highest sum, `acc_norm` the highest sum divided by the
option's length in characters (lm-eval's convention). The letters play no part: a small base model that
cannot map what it knows onto "A"–"D" still shows what it learned.

Batched, and the options of one question share the question's prefix: the contexts of a batch of questions
run once (left padded, with their KV cache), the cache is repeated for the 4 options, and only the options'
tokens run a second time (right padded, positions continuing each row's context), the output head only where a
real option token is predicted, where the output embeddings alone give the model's logits (`_head_alone`). `share_prefix=False` runs
every (context + option) sequence whole instead; both give the same numbers (a test checks), the shared one
is faster (bench/eval.py measures it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clkt.documents.answer_cues import answer_cue
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.prompts import LETTERS
from clkt.targets.prompting import RenderedPrompt, render_prompt, uses_chat_template

if TYPE_CHECKING:
    from clkt.config import TargetSettings

__all__ = ["LoglikItem", "LoglikScored", "cache_kwarg", "loglik_item", "output_cache", "score_option_loglik"]

Progress = Callable[[int], None]
HEAD_CHUNK = 512  # option positions per output-head call: bounds the (positions x vocabulary) logits held at once
HEAD_CHECK_TOKENS = 8  # the tokens of the pass that checks the output head alone gives the logits (`_head_alone`)


@dataclass(frozen=True, slots=True)
class LoglikItem:
    context: RenderedPrompt
    continuations: tuple[str, ...]  # the option texts, with the delimiter the context expects
    lengths: tuple[int, ...]  # the options' lengths in characters (acc_norm's divisor)


@dataclass(frozen=True, slots=True)
class LoglikScored:
    acc: str  # the letter with the highest summed log-likelihood
    acc_norm: str  # ... per character of the option
    logliks: tuple[float, ...]

    @property
    def raw(self) -> str:
        return " ".join(f"{LETTERS[i]}={v:.3f}" for i, v in enumerate(self.logliks))


def loglik_item(
    target: TargetSettings, tokenizer: Any, question: str, options: Sequence[str], lang: str, *, prefix: str = "",
) -> LoglikItem:
    """`prefix`: text before the question in the context (the in-context track's document block, `clkt.incontext`)."""
    if len(options) != 4:
        raise ValueError(f"a question needs exactly 4 options, got {len(options)}")
    if uses_chat_template(target, tokenizer):  # the assistant's turn starts right after the template
        ctx = render_prompt(target, tokenizer, prefix + question.strip())
        conts = tuple(o.strip() for o in options)
    else:
        ctx = RenderedPrompt(f"{prefix}{question.strip()}\n{answer_cue(lang)}", True)
        conts = tuple(" " + o.strip() for o in options)  # lm-eval's target_delimiter
    return LoglikItem(ctx, conts, tuple(max(1, len(o.strip())) for o in options))


def _encode(tokenizer: Any, items: Sequence[LoglikItem], max_length: int | None) -> tuple[list[list[int]], list[list[list[int]]]]:
    ctxs: list[list[int]] = []
    conts: list[list[list[int]]] = []
    for it in items:
        c = list(tokenizer.encode(it.context.text, add_special_tokens=it.context.add_special_tokens))
        opts = [list(tokenizer.encode(o, add_special_tokens=False)) or [tokenizer.eos_token_id] for o in it.continuations]
        if max_length is not None:  # keep the end of an over-long context: the question and cue live there
            room = max(1, max_length - max(len(o) for o in opts))
            c = c[-room:]
        ctxs.append(c)
        conts.append(opts)
    return ctxs, conts


def _token_logprobs(logits: Any, targets: Any) -> Any:
    """log p(target) per position, without materialising the full log-softmax."""
    import torch

    logits = logits.float()
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def cache_kwarg(model: Any) -> str:
    """`cache` (transformers >= 5.x) or the older `past_key_values`."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model  # a peft wrapper takes **kwargs
    return "cache" if "cache" in inspect.signature(inner.forward).parameters else "past_key_values"


def output_cache(out: Any) -> Any:
    """The keys and values a forward pass with `use_cache=True` returned: `cache` (transformers >= 5.x) or the older
    `past_key_values`."""
    return getattr(out, "cache", None) or out.past_key_values


def _shared(model: Any, pad: int, ctxs: list[list[int]], conts: list[list[list[int]]]) -> list[list[float]]:
    import torch

    b = len(ctxs)
    k = len(conts[0])
    lc = max(len(c) for c in ctxs)
    ids = torch.full((b, lc), pad, dtype=torch.long)
    mask = torch.zeros((b, lc), dtype=torch.long)
    for i, c in enumerate(ctxs):  # left padding: every context ends at the last column
        ids[i, lc - len(c) :] = torch.tensor(c)
        mask[i, lc - len(c) :] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    dev = model.device
    out = model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev), use_cache=True, logits_to_keep=1)
    last = out.logits[:, -1, :]  # predicts each option's first token
    cache = output_cache(out)
    cache.batch_repeat_interleave(k)
    flat = [o for opts in conts for o in opts]
    lo = max(len(o) for o in flat)
    cids = torch.full((b * k, lo), pad, dtype=torch.long)
    cmask = torch.zeros((b * k, lo), dtype=torch.long)
    for r, o in enumerate(flat):  # right padding: the pads come after every real token
        cids[r, : len(o)] = torch.tensor(o)
        cmask[r, : len(o)] = 1
    full_mask = torch.cat([mask.repeat_interleave(k, dim=0), cmask], dim=1)
    cpos = pos[:, -1:].repeat_interleave(k, dim=0) + 1 + torch.arange(lo).unsqueeze(0)
    first = _token_logprobs(last.repeat_interleave(k, dim=0), cids[:, 0].to(dev))  # (b*k,)
    sums = [float(v) for v in first]
    if lo > 1:  # every option of one token is scored by the contexts' last logits alone
        head = _head_alone(model, ctxs[0][-HEAD_CHECK_TOKENS:])
        kwargs = dict(input_ids=cids.to(dev), attention_mask=full_mask.to(dev), position_ids=cpos.to(dev), use_cache=True)
        rest = _rest_logprobs(model, kwargs | {cache_kwarg(model): cache}, cids.to(dev), [len(o) for o in flat], head)
        sums = [s + r for s, r in zip(sums, rest, strict=True)]
    return [sums[i * k : (i + 1) * k] for i in range(b)]


def _head_alone(model: Any, tokens: list[int]) -> Any:
    """The model's output embeddings when they alone turn its final hidden states into its logits, else None: a
    model whose logits are processed further (soft-capped, scaled) is run whole. Checked on a pass of its own over
    `tokens` (a few of a context's), so the contexts' pass keeps no layer's hidden states (long in-context prompts)."""
    import torch

    head = model.get_output_embeddings()
    if head is None:
        return None
    ids = torch.tensor([tokens], dtype=torch.long, device=model.device)
    out = model(input_ids=ids, use_cache=False, logits_to_keep=1, output_hidden_states=True)
    mine = head(out.hidden_states[-1][:, -1:, :]).float()
    return head if torch.allclose(mine, out.logits[:, -1:, :].float(), rtol=1e-4, atol=1e-4) else None


def _rest_logprobs(model: Any, kwargs: dict[str, Any], cids: Any, lens: list[int], head: Any) -> list[float]:
    """Each option row's summed log p of its tokens after the first (position p predicts token p + 1, p < len - 1).

    With `head` (`_head_alone`), the output head (the vocabulary's logits: 262k columns for Gemma, most of a small
    model's work per token) runs only at those positions, not at every padded one: the pass returns the final
    hidden states, gathered where a real token is predicted. Without, the whole logits are computed as before."""
    import torch

    if head is None:
        return _rest_from_logits(model(**kwargs).logits, cids, lens)
    hidden = model(**kwargs, logits_to_keep=1, output_hidden_states=True).hidden_states[-1]
    rows = torch.tensor([r for r, n in enumerate(lens) for _ in range(n - 1)], dtype=torch.long, device=cids.device)
    cols = torch.tensor([p for n in lens for p in range(n - 1)], dtype=torch.long, device=cids.device)
    sums = [0.0] * len(lens)
    for i in range(0, len(rows), HEAD_CHUNK):
        r, c = rows[i : i + HEAD_CHUNK], cols[i : i + HEAD_CHUNK]
        for row, v in zip(r.tolist(), _token_logprobs(head(hidden[r, c]), cids[r, c + 1]).tolist(), strict=True):
            sums[row] += v
    return sums


def _rest_from_logits(logits: Any, cids: Any, lens: list[int]) -> list[float]:
    rest = _token_logprobs(logits[:, :-1, :], cids[:, 1:])  # (rows, lo-1)
    return [float(rest[r, : n - 1].sum()) if n > 1 else 0.0 for r, n in enumerate(lens)]


def _whole(model: Any, pad: int, ctxs: list[list[int]], conts: list[list[list[int]]]) -> list[list[float]]:
    """Every (context + option) sequence run whole, right padded (the reference computation)."""
    import torch

    seqs = [(c, o) for c, opts in zip(ctxs, conts, strict=True) for o in opts]
    n = max(len(c) + len(o) for c, o in seqs)
    ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for r, (c, o) in enumerate(seqs):
        ids[r, : len(c) + len(o)] = torch.tensor(c + o)
        mask[r, : len(c) + len(o)] = 1
    dev = model.device
    logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev), use_cache=False).logits
    sums: list[float] = []
    for r, (c, o) in enumerate(seqs):
        lp = _token_logprobs(logits[r, len(c) - 1 : len(c) + len(o) - 1, :], ids[r, len(c) : len(c) + len(o)].to(dev))
        sums.append(float(lp.sum()))
    k = len(conts[0])
    return [sums[i * k : (i + 1) * k] for i in range(len(ctxs))]


def score_option_loglik(
    model: Any, tokenizer: Any, items: Sequence[LoglikItem], *, batch_size: int = 8, max_length: int | None = None,
    share_prefix: bool = True, progress: Progress | None = None, sizer: BatchSizer | None = None,
) -> list[LoglikScored]:
    """`batch_size` questions per forward pass (4x as many sequences for the options), in the input order; with
    a `sizer`, its size (halved on an out-of-memory error when automatic)."""
    import torch

    if not items:
        return []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    ctxs, conts = _encode(tokenizer, items, max_length)
    order = sorted(range(len(items)), key=lambda i: len(ctxs[i]) + max(len(o) for o in conts[i]))
    out: list[LoglikScored | None] = [None] * len(items)
    run = _shared if share_prefix else _whole

    def batch(idx: list[int]) -> None:
        sums = run(model, pad, [ctxs[i] for i in idx], [conts[i] for i in idx])
        for i, s in zip(idx, sums, strict=True):
            norm = [v / n for v, n in zip(s, items[i].lengths, strict=True)]
            out[i] = LoglikScored(
                acc=LETTERS[max(range(len(s)), key=s.__getitem__)],
                acc_norm=LETTERS[max(range(len(norm)), key=norm.__getitem__)],
                logliks=tuple(s),
            )

    def done(idx: list[int], _: None) -> None:
        if progress is not None:
            progress(len(idx))

    with torch.inference_mode():
        (sizer or BatchSizer(size=batch_size, automatic=False)).run(order, batch, on_done=done)
    return [s for s in out if s is not None]
