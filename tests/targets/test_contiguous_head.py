"""`contiguous_head`: the output head gets contiguous hidden states, so the logits of the last position of a frozen
model are one matrix product, not a batched product over a broadcast weight (`clkt.targets.loader`)."""

from __future__ import annotations

from typing import Any

import torch

from clkt.targets.loader import contiguous_head
from tests.evaluate._tiny import tiny_model


def _seen(model: Any) -> list[bool]:
    seen: list[bool] = []
    model.get_output_embeddings().register_forward_pre_hook(lambda _m, args: seen.append(args[0].is_contiguous()))
    return seen


def test_a_frozen_models_last_position_logits_reach_the_head_contiguous_and_unchanged() -> None:
    model = tiny_model("gemma3").eval().requires_grad_(False)
    ids = torch.tensor([[3, 5, 7, 9, 11], [2, 4, 6, 8, 10]])
    with torch.inference_mode():
        whole = model(input_ids=ids).logits[:, -1:, :]
    contiguous_head(model)
    contiguous_head(model)  # once is enough: a second call adds no hook
    seen = _seen(model)
    with torch.inference_mode():
        last = model(input_ids=ids, logits_to_keep=1).logits
    assert seen == [True]
    assert len(model.get_output_embeddings()._forward_pre_hooks) == 2  # ours and the test's
    torch.testing.assert_close(last, whole)


def test_without_the_hook_the_head_sees_a_strided_slice() -> None:
    """The premise: transformers hands the head a non-contiguous view when it keeps the last position only."""
    model = tiny_model("gemma3").eval().requires_grad_(False)
    seen = _seen(model)
    with torch.inference_mode():
        model(input_ids=torch.tensor([[3, 5, 7], [2, 4, 6]]), logits_to_keep=1)
    assert seen == [False]
