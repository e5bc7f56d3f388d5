"""The edits' target values `z` (MEMIT §4.2, eq. 16), and what the model computes at the subject's last token.

For one subject, `z` is the residual stream at the top edited layer, at the subject's last token, that makes
the model say each of the subject's objects after its relation prompt: a vector δ is added to that layer's
output at that position and optimized by gradient descent on the objects' negative log-likelihood (all the
subject's requests together, since they share that position), with a weight decay relative to the hidden
state's norm and δ's norm clamped to a fraction of it; z = h + δ. The model's weights do not change here.

`Batch` holds the requests of a few subjects encoded together (right-padded): the prompt and its target, the
target's labels, the subject's last token and the subject (group) of each row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clkt.inject.editing.requests import EditRequest

__all__ = ["Batch", "ZSettings", "encode", "group_mean", "inputs_at", "optimize_values", "outputs_at"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ZSettings:
    steps: int = 25
    lr: float = 0.5
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


def _captured(model: Any, module: Any, batch: Batch, *, inputs: bool) -> Any:
    import torch

    got: list[Any] = []

    def pre(_m: Any, args: tuple[Any, ...]) -> None:
        got.append(args[0][_rows(batch), batch.subject_pos].detach().float())

    def post(_m: Any, _args: Any, out: Any) -> None:
        hs = out[0] if isinstance(out, tuple) else out
        got.append(hs[_rows(batch), batch.subject_pos].detach().float())

    handle = module.register_forward_pre_hook(pre) if inputs else module.register_forward_hook(post)
    try:
        with torch.no_grad():
            _decoder(model)(input_ids=batch.input_ids, attention_mask=batch.attention_mask)
    finally:
        handle.remove()
    return got[0]


def inputs_at(model: Any, module: Any, batch: Batch) -> Any:
    """The input of `module` (the down-projection: the key) at each row's subject token (B x d_ff, float32)."""
    return _captured(model, module, batch, inputs=True)


def outputs_at(model: Any, module: Any, batch: Batch) -> Any:
    """The output of `module` (a decoder layer: the residual stream) at each row's subject token (B x d)."""
    return _captured(model, module, batch, inputs=False)


def _decoder(model: Any) -> Any:
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.get_decoder()


def _target_nll(model: Any, batch: Batch) -> Any:
    """Per row, the mean negative log-likelihood of its target tokens (logits only where a label is)."""
    import torch

    hidden = _decoder(model)(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
    labels = batch.labels[:, 1:]
    where = labels != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][where]).float()
    cap = getattr(getattr(model, "config", None), "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    nll = torch.nn.functional.cross_entropy(logits, labels[where], reduction="none")
    row = where.nonzero()[:, 0]
    total = torch.zeros(labels.shape[0], device=nll.device).index_add_(0, row, nll)
    return total / where.sum(1).clamp(min=1)


def optimize_values(model: Any, layer: Any, batch: Batch, z: ZSettings) -> tuple[Any, float, float]:
    """(z per group (groups x d), the mean target NLL before, after): δ added to `layer`'s output at the
    subjects' last tokens, optimized for `z.steps` steps or until every subject's target NLL is below
    `z.stop_nll` (the objects already said: more steps would only grow δ)."""
    import torch

    h = group_mean(outputs_at(model, layer, batch), batch)  # groups x d
    h_norm = h.norm(dim=1, keepdim=True).clamp(min=1e-6)
    delta = torch.zeros_like(h, requires_grad=True)
    rows = _rows(batch)

    def add_delta(_m: Any, _args: Any, out: Any) -> Any:
        hs = out[0] if isinstance(out, tuple) else out
        hs = hs.clone()
        hs[rows, batch.subject_pos] = hs[rows, batch.subject_pos] + delta[batch.group].to(hs.dtype)
        return (hs, *out[1:]) if isinstance(out, tuple) else hs

    grads = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    handle = layer.register_forward_hook(add_delta)
    opt = torch.optim.Adam([delta], lr=z.lr)
    first = last = float("nan")
    try:
        for step in range(z.steps + 1):
            per_row = _target_nll(model, batch)
            loss_g = group_mean(per_row[:, None], batch)[:, 0]
            if step == 0:
                first = float(loss_g.detach().mean())
            last = float(loss_g.detach().mean())
            if step == z.steps or bool((loss_g.detach() < z.stop_nll).all()):
                break
            decay = z.weight_decay * (delta.norm(dim=1) ** 2 / h_norm[:, 0] ** 2)
            opt.zero_grad()
            (loss_g + decay).sum().backward()
            opt.step()
            with torch.no_grad():  # ||δ|| <= clamp * ||h||
                scale = (z.clamp * h_norm / delta.norm(dim=1, keepdim=True).clamp(min=1e-12)).clamp(max=1.0)
                delta.mul_(scale)
    finally:
        handle.remove()
        for p, g in zip(model.parameters(), grads, strict=True):
            p.requires_grad_(g)
    return (h + delta.detach()), first, last
