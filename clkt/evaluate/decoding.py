"""Greedy generation that does not wait for its slowest row: rows leave the batch once decided, new ones join.

`generate_continuous` keeps up to `sizer.size` prompts decoding at once. After every step, a row whose letter
is decided (`letter_decided`, on its text decoded incrementally: `StreamText` decodes the new token with a few
before it, not the whole completion again; or the caller's `stop` predicate: the open track's line break), that
produced an end-of-sequence token or `max_new_tokens` tokens leaves the batch (its rows of the KV cache and the
attention mask are dropped: the next pass runs only the rows still generating), and prompts from the queue (sorted
by length, as the static batches are) join it. They are prefilled a few at a time (`PREFILL_AHEAD`), ahead of need: on a CPU a forward
pass costs about the same for one row as for several, so a row that leaves is replaced by one already prefilled,
and the prompts cost a quarter of the passes (at most `PREFILL_AHEAD` rows wait prefilled beside the batch).
Prompts that begin with the same tokens (the chat template and the instruction of a language: about a third of
the demo's prompt tokens) are grouped (`prefix_groups`) and their common prefix is run once per group: its cache
is copied under every row of the group, which prefills only the rest of its prompt (the row's cache is then the
prefix, the suffix's left padding, the suffix: the mask hides the padding and the positions skip it).
A joining row's cache is left-padded to the running cache's length (or the other way round) and stacked, the
attention mask hides the padding and each row's positions follow its own mask, as left-padded batches do. The
tokens a row generates are those `model.generate` would give it at temperature 0 (the same argmax of the same
logits, up to float rounding of other paddings): a test checks the answers on the demo's questions against the
static batches.

It runs on transformers' dynamic cache (full-attention layers, and sliding-window layers while every row fits
in the window); `supports_continuous` says whether a model qualifies, and generation settings that
`model.generate` would apply beyond the argmax (repetition penalty and the like) send it to the static
batches too (`clkt.evaluate.scorers.score_generate`). An out-of-memory error puts the batch's rows back in
the queue, with the rows prefilled ahead, at a smaller size (`BatchSizer`).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clkt.evaluate._stream_text import StreamText
from clkt.evaluate.loglik import cache_kwarg, output_cache
from clkt.evaluate.memory import BatchSizer, is_oom
from clkt.evaluate.parse import ParseMode, letter_decided
from clkt.targets.prompting import RenderedPrompt

__all__ = ["MIN_SHARED_PREFIX", "PREFILL_AHEAD", "REFILL_FRACTION", "generate_continuous", "prefix_groups", "supports_continuous"]

# refill once this share of the batch is free (or the batch is empty); 0: whenever a row is free. On 2 CPU cores, 40
# of the demo's questions with the embedded instruct target, batch 8: 0 -> 1.61x static batches, 0.25 -> 1.46x,
# 0.5 -> 1.40x (a decoding step costs about the same whatever its rows, so a fuller batch takes fewer steps; a
# prefill costs its prompts' tokens whether they join one by one or together)
REFILL_FRACTION = 0.0
PREFILL_AHEAD = 4  # prompts prefilled together when the batch needs one: the others wait, prefilled, to join it
MIN_SHARED_PREFIX = 16  # tokens: prompts sharing fewer first tokens prefill them with the rest

# generation settings under which `model.generate` does more than take the argmax
_PROCESSING = {
    "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_repetition_penalty": 1.0, "bad_words_ids": None,
    "min_length": 0, "min_new_tokens": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "forced_bos_token_id": None, "forced_eos_token_id": None, "sequence_bias": None, "exponential_decay_length_penalty": None,
}


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    cfg = getattr(model, "generation_config", None)
    eos = getattr(cfg, "eos_token_id", None) if cfg is not None else None
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return set()
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


def supports_continuous(model: Any, *, longest: int) -> bool:
    """Whether `model`'s greedy decoding can run continuously for rows of up to `longest` tokens (prompt + new)."""
    cfg = getattr(model, "generation_config", None)
    if cfg is not None:
        for key, neutral in _PROCESSING.items():
            value = getattr(cfg, key, neutral)
            if value not in (neutral, None) and not (key == "min_length" and value == 0):
                return False
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    window = getattr(text, "sliding_window", None)
    layer_types = getattr(text, "layer_types", None) or []
    if any(t not in ("full_attention", "sliding_attention") for t in layer_types):
        return False  # linear attention, chunked attention, state-space layers: no plain cache rows
    return not (window and (layer_types == [] or "sliding_attention" in layer_types) and longest >= int(window) - 1)


@dataclass(slots=True)
class _Row:
    index: int  # position in the caller's prompts
    completion: StreamText | None = None  # its tokens and their text, from its first generated token


class _Batch:
    """The rows decoding together: their cache, attention mask and next-token logits."""

    def __init__(self) -> None:
        self.rows: list[_Row] = []
        self.cache: Any = None
        self.mask: Any = None  # (rows, cache length), 1 for real tokens
        self.logits: Any = None  # (rows, vocab): the next token of each row

    def __len__(self) -> int:
        return len(self.rows)

    def clear(self) -> None:
        self.rows, self.cache, self.mask, self.logits = [], None, None, None


def _layers(cache: Any) -> list[Any]:
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise TypeError(f"{type(cache).__name__} has no cache layers")
    return list(layers)


def _pad_left(cache: Any, mask: Any, n: int) -> Any:
    """`n` empty (masked) columns before every row of `cache`; returns the longer mask."""
    import torch

    if n <= 0:
        return mask
    for layer in _layers(cache):
        for name in ("keys", "values"):
            t = getattr(layer, name)
            setattr(layer, name, torch.cat([t.new_zeros((*t.shape[:2], n, t.shape[3])), t], dim=2))
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = int(layer.keys.shape[2])
    return torch.cat([mask.new_zeros((mask.shape[0], n)), mask], dim=1)


def _stack(into: Any, other: Any) -> None:
    import torch

    for a, b in zip(_layers(into), _layers(other), strict=True):
        a.keys = torch.cat([a.keys, b.keys], dim=0)
        a.values = torch.cat([a.values, b.values], dim=0)


def _trim(cache: Any, mask: Any) -> Any:
    """Drop the leading columns no row uses any more; returns the shorter mask."""
    used = mask.any(dim=0).nonzero()
    first = int(used[0]) if used.numel() else mask.shape[1]
    if first == 0:
        return mask
    for layer in _layers(cache):
        layer.keys = layer.keys[:, :, first:, :]
        layer.values = layer.values[:, :, first:, :]
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = int(layer.keys.shape[2])
    return mask[:, first:]


def _forward(model: Any, ids: Any, mask: Any, cache: Any, *, prefill: bool) -> tuple[Any, Any]:
    import torch

    past = 0 if cache is None else int(mask.shape[1] - ids.shape[1])
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]
    kwargs: dict[str, Any] = {
        "input_ids": ids, "attention_mask": mask, "position_ids": pos, "use_cache": True,
        "cache_position": torch.arange(past, past + ids.shape[1], device=ids.device),
    }
    if cache is not None:
        kwargs[cache_kwarg(model)] = cache
    try:
        out = model(**kwargs, logits_to_keep=1) if prefill else model(**kwargs)
    except TypeError:  # a model class without `logits_to_keep`
        out = model(**kwargs)
    return out.logits[:, -1, :], output_cache(out)


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def prefix_groups(enc: Sequence[Sequence[int]], *, min_prefix: int = MIN_SHARED_PREFIX) -> list[tuple[int, list[int]]]:
    """The prompts (token lists) in groups that share their first tokens: (prefix length, members shortest first),
    every prompt in exactly one group. A prefix leaves each member at least one token of its own (the prefill's
    next-token logits). The prompts that share no prefix of `min_prefix` tokens with another are one last group,
    of prefix length 0 (prefilled together as before).

    Runs of the prompts in lexicographic order (where a run's common prefix is the least common prefix of its
    neighbours); a prompt joins the run before it while the run saves at least as many prefill tokens with it as
    without it (m members sharing p tokens save (m - 1) p). A run of one prompt may share all of it but its last
    token."""
    order = sorted(range(len(enc)), key=lambda i: list(enc[i]))
    runs: list[tuple[int, list[int]]] = []
    for i in order:
        if runs:
            p, members = runs[-1]
            q = min(_common(enc[members[-1]], enc[i]), len(enc[i]) - 1, p)
            if q >= min_prefix and len(members) * q >= (len(members) - 1) * p:
                runs[-1] = (q, [*members, i])
                continue
        runs.append((len(enc[i]) - 1, [i]))
    shared = [(p, sorted(members, key=lambda i: len(enc[i]))) for p, members in runs if len(members) > 1]
    alone = sorted((members[0] for _, members in runs if len(members) == 1), key=lambda i: len(enc[i]))
    return shared + ([(0, alone)] if alone else [])


def generate_continuous(
    model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], *, sizer: BatchSizer, max_new_tokens: int,
    max_length: int | None = None, parse: ParseMode = "strict", progress: Callable[[int], None] | None = None,
    share_prefixes: bool = True, stop: Callable[[str], bool] | None = None,
) -> list[str]:
    """The greedy completion of every prompt (up to its decided letter), in the input order. `share_prefixes`:
    run the first tokens that prompts share once per group of them (`prefix_groups`). `stop`: whether a row's
    completion so far is done (besides the end of sequence and `max_new_tokens`); None: its MCQ letter is decided
    (`letter_decided` under `parse`). The open track stops at a line break instead (`clkt.openqa.generate`)."""
    import torch

    done = stop if stop is not None else (lambda text: letter_decided(text, parse))

    add = prompts[0].add_special_tokens if prompts else True
    kwargs: dict[str, Any] = {}
    if max_length is not None:  # as `encode_left_padded`: keep the end of an over-long prompt
        tokenizer.truncation_side = "left"
        kwargs = {"truncation": True, "max_length": max_length}
    enc = [list(tokenizer(p.text, add_special_tokens=add, **kwargs)["input_ids"]) for p in prompts]
    by_length = sorted(range(len(prompts)), key=lambda i: len(enc[i]))
    groups = prefix_groups(enc) if share_prefixes else [(0, by_length)]
    group_of = {i: g for g, (_, members) in enumerate(groups) for i in members}
    queue: deque[int] = deque(i for _, members in groups for i in members)
    prefixes = _Prefixes(model, enc, groups, group_of)
    eos = _eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out: list[str | None] = [None] * len(prompts)
    batch = _Batch()  # the rows decoding
    ready = _Batch()  # rows prefilled ahead, waiting for a free row of the batch
    moving: list[int] = []
    dev = model.device
    with torch.inference_mode():
        while queue or batch.rows or ready.rows:
            try:
                free = sizer.size - len(batch)
                if free > 0 and (not batch.rows or free >= max(1, int(sizer.size * REFILL_FRACTION))):
                    if len(ready) < free and queue:
                        # one prefill for the free rows and a few more: a forward pass costs about the same for one
                        # prompt as for several, and the rows prefilled ahead join as soon as others leave
                        n = min(len(queue), max(free - len(ready), min(PREFILL_AHEAD, sizer.size)))
                        take = _same_group(queue, n, group_of)
                        _prefill(model, ready, take, enc, pad, dev, prefixes.get(group_of[take[0]]))
                        for _ in take:  # only once they are prefilled: an out-of-memory error leaves them queued
                            prefixes.taken(queue.popleft())
                    if ready.rows:
                        part = _take_rows(ready, min(free, len(ready)), dev)
                        moving = [r.index for r in part.rows]  # in neither batch until joined
                        _join(batch, part)
                        moving = []
                _step(model, tokenizer, batch, eos, max_new_tokens, done, out, dev, progress)
            except RuntimeError as e:
                if not is_oom(e):
                    raise
                back = dict.fromkeys([r.index for r in batch.rows] + moving + [r.index for r in ready.rows])
                queue.extendleft(reversed(list(back)))
                prefixes.returned(back)
                batch.clear()
                ready.clear()
                moving = []
                sizer.shrink(e)
    return [t if t is not None else "" for t in out]


def _same_group(queue: deque[int], n: int, group_of: dict[int, int]) -> list[int]:
    """Up to `n` prompts from the head of `queue`, all of the first one's group."""
    g = group_of[queue[0]]
    return list(itertools.takewhile(lambda i: group_of[i] == g, itertools.islice(queue, n)))


class _Prefixes:
    """The cache of each group's shared prefix, run when the group's first prompt is prefilled and dropped once the
    queue holds none of its prompts (the queue is in groups, so one or two are kept at a time)."""

    def __init__(self, model: Any, enc: list[list[int]], groups: list[tuple[int, list[int]]], group_of: dict[int, int]) -> None:
        self.model, self.enc, self.groups, self.group_of = model, enc, groups, group_of
        self.dev = model.device
        self.queued = [len(members) for _, members in groups]
        self.caches: dict[int, Any] = {}

    def get(self, g: int) -> tuple[int, Any] | None:
        """(prefix length, its one-row cache) for group `g`; None when the group shares no prefix."""
        import torch

        p, members = self.groups[g]
        if p == 0:
            return None
        if g not in self.caches:
            ids = torch.tensor([self.enc[members[0]][:p]], dtype=torch.long, device=self.dev)
            _, self.caches[g] = _forward(self.model, ids, torch.ones_like(ids), None, prefill=True)
        return p, self.caches[g]

    def taken(self, i: int) -> None:
        g = self.group_of[i]
        self.queued[g] -= 1
        if self.queued[g] == 0:
            self.caches.pop(g, None)

    def returned(self, rows: Iterable[int]) -> None:
        for i in rows:
            self.queued[self.group_of[i]] += 1


def _shallow_copy(cache: Any) -> Any:
    """A cache object of its own over the same tensors: its layers can be given other tensors, `cache`'s keep theirs."""
    import copy

    out = copy.copy(cache)
    out.layers = [copy.copy(layer) for layer in _layers(cache)]
    return out


def _copies(cache: Any, k: int) -> Any:
    """A cache of `k` rows, each a copy of the one row of `cache` (which stays as it is)."""
    out = _shallow_copy(cache)
    for layer in out.layers:
        layer.keys = layer.keys.expand(k, -1, -1, -1).contiguous()
        layer.values = layer.values.expand(k, -1, -1, -1).contiguous()
    return out


def _prefill(
    model: Any, into: _Batch, take: list[int], enc: list[list[int]], pad: int, dev: Any, prefix: tuple[int, Any] | None,
) -> None:
    """Prefill the prompts `take` together (left-padded) and add them to `into` (their next-token logits ready).
    With `prefix` (its length and one-row cache), only the tokens after it are run, on copies of its cache."""
    import torch

    skip = prefix[0] if prefix is not None else 0
    n = max(len(enc[i]) - skip for i in take)
    ids = torch.full((len(take), n), pad, dtype=torch.long)
    mask = torch.zeros((len(take), skip + n), dtype=torch.long)
    mask[:, :skip] = 1
    for r, i in enumerate(take):
        rest = enc[i][skip:]
        ids[r, n - len(rest) :] = torch.tensor(rest)
        mask[r, skip + n - len(rest) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    past = _copies(prefix[1], len(take)) if prefix is not None else None
    logits, cache = _forward(model, ids, mask, past, prefill=True)
    part = _Batch()
    part.rows, part.cache, part.mask, part.logits = [_Row(i) for i in take], cache, mask, logits
    _join(into, part)


def _take_rows(src: _Batch, k: int, dev: Any) -> _Batch:
    """The first `k` rows of `src` as a batch of their own (their cache trimmed to their own longest row); `src`
    keeps the others."""
    import torch

    if k >= len(src):
        out = _Batch()
        out.rows, out.cache, out.mask, out.logits = src.rows, src.cache, src.mask, src.logits
        src.clear()
        out.mask = _trim(out.cache, out.mask)
        return out
    first, rest = torch.arange(k, device=dev), torch.arange(k, len(src), device=dev)
    out = _Batch()
    out.cache = _shallow_copy(src.cache)
    out.cache.batch_select_indices(first)
    src.cache.batch_select_indices(rest)
    out.rows, src.rows = src.rows[:k], src.rows[k:]
    out.logits, src.logits = src.logits[:k], src.logits[k:]
    out.mask = _trim(out.cache, src.mask[:k])
    src.mask = _trim(src.cache, src.mask[k:])
    return out


def _join(batch: _Batch, part: _Batch) -> None:
    """Add the rows of `part` to `batch`: the shorter cache left-padded to the longer one's length, then stacked."""
    import torch

    if not batch.rows:
        batch.rows, batch.cache, batch.mask, batch.logits = part.rows, part.cache, part.mask, part.logits
        return
    width, n = batch.mask.shape[1], part.mask.shape[1]
    mask = part.mask
    if n < width:
        mask = _pad_left(part.cache, mask, width - n)
    elif n > width:
        batch.mask = _pad_left(batch.cache, batch.mask, n - width)
    _stack(batch.cache, part.cache)
    batch.mask = torch.cat([batch.mask, mask], dim=0)
    batch.logits = torch.cat([batch.logits, part.logits], dim=0)
    batch.rows += part.rows


def _step(
    model: Any, tokenizer: Any, batch: _Batch, eos: set[int], max_new_tokens: int, done: Callable[[str], bool],
    out: list[str | None], dev: Any, progress: Callable[[int], None] | None,
) -> None:
    """Take each row's next token; rows that are done leave; the others run one more position."""
    import torch

    nxt = batch.logits.argmax(dim=-1).tolist()
    keep: list[int] = []
    finished = 0
    for r, (row, tok) in enumerate(zip(batch.rows, nxt, strict=True)):
        if row.completion is None:
            row.completion = StreamText(tokenizer)
        text = row.completion.add(int(tok))  # the new token's text only, not the whole completion's again
        if int(tok) in eos or len(row.completion.tokens) >= max_new_tokens or done(text):
            out[row.index] = text
            finished += 1
        else:
            keep.append(r)
    if finished and progress is not None:
        progress(finished)
    if not keep:
        batch.clear()
        return
    if len(keep) < len(batch.rows):
        idx = torch.tensor(keep, device=dev)
        batch.cache.batch_select_indices(idx)
        batch.rows = [batch.rows[r] for r in keep]
        batch.mask = _trim(batch.cache, batch.mask[idx])
        nxt = [nxt[r] for r in keep]
    batch.mask = torch.cat([batch.mask, batch.mask.new_ones((len(keep), 1))], dim=1)
    ids = torch.tensor(nxt, dtype=torch.long, device=dev).unsqueeze(1)
    batch.logits, batch.cache = _forward(model, ids, batch.mask, batch.cache, prefill=False)
