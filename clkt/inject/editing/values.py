"""The edits' target values `z` (MEMIT §4.2, eq. 16), and what the model computes at the subject's last token.

For one subject, `z` is the residual stream at the top edited layer, at the subject's last token, that makes
the model say each of the subject's objects after its relation prompt: a vector δ is added to that layer's
output at that position and optimized by gradient descent on the objects' negative log-likelihood (all the
subject's requests together, since they share that position), with a weight decay relative to the hidden
state's norm and δ's norm clamped to a fraction of it; z = h + δ. The model's weights do not change here.

`Batch` holds the requests of a few subjects encoded together (right-padded): the prompt and its target, the
target's labels, the subject's last token and the subject (group) of each row.

The tokens before the subject's last token do not depend on δ (the model is causal and δ is added at that
token). Where every row of a batch starts with the same such tokens (one subject's requests: each prompt starts
with the subject), they run once, without gradients, and each step runs only the rest of the rows on their keys
and values (`shared_prefix`): the same values and gradients at a fraction of the tokens (a long subject, "The
magnitude 8.2 earthquake of 15 November 2026 (UTC) whose epicentre ...", is most of every prompt about it).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clkt.evaluate.loglik import cache_kwarg, output_cache

if TYPE_CHECKING:
    from clkt.inject.editing.requests import EditRequest

__all__ = [
    "Batch", "ZSettings", "encode", "group_mean", "inputs_at", "mean_target_nll", "optimize_values", "shared_prefix",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ZSettings:
    steps: int = 25
    lr: float = 0.1
    weight_decay: float = 0.5  # on ||δ||² / ||h||²
    clamp: float = 0.75  # ||δ|| <= clamp * ||h||
    stop_nll: float = 0.05  # early stop: every subject's target NLL below this (nats per token); 0: all `steps`


@dataclass(frozen=True, slots=True)
class Batch:
    input_ids: Any  # B x T
    attention_mask: Any  # B x T
    labels: Any  # B x T, -100 outside the target
    subject_pos: Any  # B: the subject's last token
    group: Any  # B: the row's subject, 0..groups-1
    groups: int


def _ids(tok: Any, text: str, *, special: bool = True) -> list[int]:
    return list(tok(text, add_special_tokens=special)["input_ids"])


def encode(tok: Any, requests: Sequence[EditRequest], group_of: Sequence[int], *, device: str, max_len: int) -> Batch:
    """`requests` (group `group_of[i]` each) as one right-padded batch."""
    import torch

    rows: list[tuple[list[int], list[int], int]] = []
    for r in requests:
        prompt = _ids(tok, r.prompt)
        full = _ids(tok, r.prompt + r.target)
        if full[: len(prompt)] != prompt or len(full) == len(prompt):
            full = prompt + _ids(tok, r.target, special=False)
        full = full[:max_len]  # the subject leads: a long request loses its target's tail
        cut = min(len(prompt), len(full) - 1)  # at least one target token
        subject = max(0, min(len(_ids(tok, r.subject)) - 1, cut - 1))
        labels = [-100] * cut + full[cut:]
        rows.append((full, labels, subject))
    width = max(len(f) for f, _, _ in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.tensor([f + [pad] * (width - len(f)) for f, _, _ in rows], device=device)
    mask = torch.tensor([[1] * len(f) + [0] * (width - len(f)) for f, _, _ in rows], device=device)
    targets = torch.tensor([lb + [-100] * (width - len(lb)) for _, lb, _ in rows], device=device)
    return Batch(input_ids=ids, attention_mask=mask, labels=targets,
                 subject_pos=torch.tensor([s for _, _, s in rows], device=device),
                 group=torch.tensor(list(group_of), device=device), groups=max(group_of) + 1)


def group_mean(x: Any, batch: Batch) -> Any:
    """Rows of `x` (B x d) averaged per group (groups x d)."""
    import torch

    out = torch.zeros(batch.groups, x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, batch.group, x)
    counts = torch.bincount(batch.group, minlength=batch.groups).clamp(min=1).to(x.dtype)
    return out / counts[:, None]


def _rows(batch: Batch) -> Any:
    import torch

    return torch.arange(batch.input_ids.shape[0], device=batch.input_ids.device)


class _Enough(Exception):
    """Raised by a hook once it has what it reads: the layers above it need not run."""


def _run_until(model: Any, batch: Batch, module: Any, hook: Any, *, pre: bool) -> None:
    """One forward pass of `batch` (no gradients) with `hook` on `module`, stopped right after it (the hook raises
    `_Enough`): the keys of a low layer cost a few layers, not the whole model."""
    import torch

    handle = module.register_forward_pre_hook(hook) if pre else module.register_forward_hook(hook)
    try:
        with torch.no_grad():
            _decoder(model)(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
    except _Enough:
        pass
    finally:
        handle.remove()


def inputs_at(model: Any, module: Any, batch: Batch) -> Any:
    """The input of `module` (the down-projection: the key) at each row's subject token (B x d_ff, float32)."""
    got: list[Any] = []

    def pre(_m: Any, args: tuple[Any, ...]) -> None:
        got.append(args[0][_rows(batch), batch.subject_pos].detach().float())
        raise _Enough

    _run_until(model, batch, module, pre, pre=True)
    return got[0]


def _decoder(model: Any) -> Any:
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.get_decoder()


@dataclass(frozen=True, slots=True)
class _Prefix:
    length: int  # the leading tokens every row shares, all before its subject's last token
    cache: Any  # their keys and values at every layer (computed without gradients)


def shared_prefix(batch: Batch) -> int:
    """How many leading tokens every row of `batch` has in common before its subject's last token: the subjects'
    last tokens at one position and the same tokens before it in every row (one subject's requests), else 0."""
    pos = batch.subject_pos
    p = int(pos[0])
    if p < 1 or not bool((pos == p).all()):
        return 0
    ids = batch.input_ids[:, :p]
    return p if bool((ids == ids[0]).all()) and bool(batch.attention_mask[:, :p].all()) else 0


def _prefix(model: Any, batch: Batch) -> _Prefix | None:
    """The rows' shared tokens before the subject, run once (None when they share none)."""
    import torch

    p = shared_prefix(batch)
    if p == 0:
        return None
    with torch.no_grad():
        out = _decoder(model)(input_ids=batch.input_ids[:, :p], attention_mask=batch.attention_mask[:, :p], use_cache=True)
    cache = output_cache(out)
    return _Prefix(length=p, cache=cache) if cache is not None else None


def _target_nll(model: Any, batch: Batch, prefix: _Prefix | None = None) -> Any:
    """Per row, the mean negative log-likelihood of its target tokens (logits only where a label is); with
    `prefix`, only the tokens after it run (on its keys and values, copied: a pass appends to them)."""
    import torch

    if prefix is None:
        hidden = _decoder(model)(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
        labels = batch.labels[:, 1:]
    else:
        dec = _decoder(model)
        hidden = dec(input_ids=batch.input_ids[:, prefix.length:], attention_mask=batch.attention_mask, use_cache=True,
                     **{cache_kwarg(dec): copy.deepcopy(prefix.cache)}).last_hidden_state
        labels = batch.labels[:, prefix.length + 1:]
    where = labels != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][where]).float()
    cap = getattr(getattr(model, "config", None), "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    nll = torch.nn.functional.cross_entropy(logits, labels[where], reduction="none")
    row = where.nonzero()[:, 0]
    total = torch.zeros(labels.shape[0], device=nll.device).index_add_(0, row, nll)
    return total / where.sum(1).clamp(min=1)


def mean_target_nll(model: Any, batches: Sequence[Batch]) -> float:
    """The edit targets' mean NLL with the model's weights as they are: per subject, then over the subjects of each
    batch and over the batches (as `optimize_values` reports its first and last)."""
    import torch

    with torch.no_grad():
        per_batch = [float(group_mean(_target_nll(model, b)[:, None], b)[:, 0].mean()) for b in batches]
    return sum(per_batch) / len(per_batch)


def _at_subjects(x: Any, batch: Batch, offset: int = 0) -> Any:
    """Each row's subject token of `x` (B x T x d), whose first `offset` tokens were not run (a shared prefix)."""
    return x[_rows(batch), batch.subject_pos - offset]


def _scales(model: Any, projs: Sequence[Any], layers: Sequence[Any], batch: Batch, *, normed: bool) -> list[Any]:
    """Per edited layer, the size δ is measured against (groups x 1): the norm of what the projection outputs at
    the subjects' last tokens where a norm follows it (only its direction reaches the stream), else the norm of
    the residual stream after the layer (MEMIT's reference)."""

    got: dict[int, Any] = {}
    watched = [p if normed else m for p, m in zip(projs, layers, strict=True)]

    def keep(i: int) -> Any:
        def hook(_m: Any, _a: Any, out: Any) -> None:
            got[i] = _at_subjects(out[0] if isinstance(out, tuple) else out, batch)
            if len(got) == len(watched):
                raise _Enough
        return hook

    hooks = [m.register_forward_hook(keep(i)) for i, m in enumerate(watched)]
    try:
        _run_until(model, batch, watched[-1], lambda *_: None, pre=False)
    finally:
        for h in hooks:
            h.remove()
    return [group_mean(got[i].float(), batch).norm(dim=1, keepdim=True).clamp(min=1e-6) for i in range(len(projs))]


def optimize_values(
    model: Any, projs: Sequence[Any], layers: Sequence[Any], batch: Batch, z: ZSettings, *, normed: bool,
    reuse_prefix: bool = True,
) -> tuple[list[Any], list[Any], float, float]:
    """(per edited layer: the keys (groups x d_ff) and the change δ of the projection's outputs (groups x d_model)
    at the subjects' last tokens, the mean target NLL before, after). One δ per layer and subject, added to the
    outputs of every edited layer's down-projection `projs` at once and optimized together for `z.steps` steps
    or until every subject's target NLL is below `z.stop_nll` (more steps would only grow δ). The weight decay
    (relative to each layer's scale, `_scales`) spreads the change over the layers, as MEMIT's spread does; a δ on
    the projection's own outputs is what its weights can write (`memit_delta`), where a norm follows it too.
    `reuse_prefix`: the rows' shared tokens before the subject run once (`shared_prefix`; False: every step runs
    every token, the same values at more cost)."""
    import torch

    scales = _scales(model, projs, layers, batch, normed=normed)
    prefix = _prefix(model, batch) if reuse_prefix else None
    offset = prefix.length if prefix is not None else 0
    d = batch.groups, int(projs[0].weight.shape[0])
    thetas = [torch.zeros(d, device=scales[0].device, requires_grad=True) for _ in projs]  # δ = θ * scale / √d
    root = float(d[1]) ** 0.5
    keys: dict[int, Any] = {}

    def hook(i: int) -> Any:
        def add(_m: Any, args: tuple[Any, ...], out: Any) -> Any:
            keys[i] = _at_subjects(args[0], batch, offset).detach().float()
            out = out.clone()
            delta = thetas[i] * scales[i] / root
            out[_rows(batch), batch.subject_pos - offset] = _at_subjects(out, batch, offset) + delta[batch.group].to(out.dtype)
            return out
        return add

    grads = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    handles = [p.register_forward_hook(hook(i)) for i, p in enumerate(projs)]
    opt = torch.optim.Adam(thetas, lr=z.lr)
    first = last = float("nan")
    try:
        for step in range(z.steps + 1):
            loss_g = group_mean(_target_nll(model, batch, prefix)[:, None], batch)[:, 0]
            first = float(loss_g.detach().mean()) if step == 0 else first
            last = float(loss_g.detach().mean())
            if step == z.steps or bool((loss_g.detach() < z.stop_nll).all()):
                break  # the keys of this last pass go with the δ it ran with
            decay = z.weight_decay * sum(t.pow(2).sum(1) for t in thetas) / d[1]
            opt.zero_grad()
            (loss_g + decay).sum().backward()
            opt.step()
            with torch.no_grad():  # ||δ|| <= clamp * scale
                for t in thetas:
                    t.mul_((z.clamp * root / t.norm(dim=1, keepdim=True).clamp(min=1e-12)).clamp(max=1.0))
    finally:
        for h in handles:
            h.remove()
        for p, g in zip(model.parameters(), grads, strict=True):
            p.requires_grad_(g)
    out_keys = [group_mean(keys[i], batch) for i in range(len(projs))]
    return out_keys, [(t * s / root).detach() for t, s in zip(thetas, scales, strict=True)], first, last
