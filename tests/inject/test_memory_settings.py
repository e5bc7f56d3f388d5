"""The settings that fit 7-9B models, checked on CPU for equivalence: gradient checkpointing gives the same loss
and the same predictions; micro-batches with accumulated gradients give the same update as the whole batch;
an out-of-memory error names the smaller size the next attempt runs at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from clkt.config import EMBEDDED_TARGET, GpuSettings
from clkt.evaluate.memory import OutOfMemory
from clkt.evaluate.scorers import score_generate, score_letter_logprob
from clkt.inject.contract import JobSpec, RetryWith
from clkt.inject.run_job import oom_retry
from clkt.inject.strategies import TrainExample, enable_checkpointing, get_recipe
from clkt.inject.trainer import TrainLoop
from clkt.targets.prompting import RenderedPrompt
from tests.evaluate._tiny import prompts, tiny_model, tiny_tokenizer


def _examples(tok: Any, n: int = 6) -> list[TrainExample]:
    out = []
    for text in prompts(n, seed=11):
        ids = tok(text, add_special_tokens=True)["input_ids"] + [tok.eos_token_id]
        out.append(TrainExample(ids, ids))
    return out


def _train(tmp: Path, *, checkpointing: bool, gpu: GpuSettings, kind: str = "llama") -> tuple[Any, list[float]]:
    torch.manual_seed(0)
    model, tok = tiny_model(kind, seed=1), tiny_tokenizer()
    strategy = get_recipe("cpt-lora")
    model = strategy.prepare(model, gpu)
    if checkpointing:
        enable_checkpointing(model)
    torch.manual_seed(gpu.seed)
    loop = TrainLoop(model=model, strategy=strategy, examples=_examples(tok), gpu=gpu, ckpt_root=tmp, pad_id=0, device="cpu")
    losses = [r.loss for r in loop.run()]
    model = strategy.for_inference(model)
    model.eval()
    return model, losses


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_gradient_checkpointing_same_loss_and_same_predictions(tmp_path: Path, kind: str) -> None:
    gpu = GpuSettings(epochs=2, learning_rate=5e-3, lora_dropout=0.1, target_modules="all-linear", batch_size=2)
    off, loss_off = _train(tmp_path / "off", checkpointing=False, gpu=gpu, kind=kind)
    on, loss_on = _train(tmp_path / "on", checkpointing=True, gpu=gpu, kind=kind)
    assert loss_on == pytest.approx(loss_off, rel=1e-5, abs=1e-6)
    for a, b in zip(off.state_dict().values(), on.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    tok = tiny_tokenizer()
    ps = [RenderedPrompt(t, True) for t in prompts(12, seed=4)]
    assert [s.raw for s in score_generate(off, tok, ps, batch_size=4, max_new_tokens=8)] == \
        [s.raw for s in score_generate(on, tok, ps, batch_size=4, max_new_tokens=8)]
    assert [s.predicted for s in score_letter_logprob(off, tok, ps, batch_size=4)] == \
        [s.predicted for s in score_letter_logprob(on, tok, ps, batch_size=4)]


@pytest.mark.parametrize("checkpointing", [False, True])
def test_checkpointing_recomputes_the_layers_in_the_backward_pass(checkpointing: bool) -> None:
    model = get_recipe("cpt-lora").prepare(tiny_model(), GpuSettings())
    if checkpointing:
        enable_checkpointing(model)
    calls = [0]
    attn = model.get_base_model().model.layers[0].self_attn  # (torch stops recomputing once it has what backward needs)
    attn.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    model.train()
    ids = torch.tensor([[1, 8, 9, 10, 11, 2]])
    model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    assert calls[0] == (2 if checkpointing else 1)  # forward, and again in the backward pass


def test_micro_batches_give_the_update_of_the_whole_batch(tmp_path: Path) -> None:
    # no dropout: the micro-batches and the whole batch then differ only in the order of float sums
    whole = GpuSettings(epochs=2, learning_rate=5e-3, lora_dropout=0.0, batch_size=3, seed=2)
    micro = whole.model_copy(update={"micro_batch_size": 1})
    a, loss_a = _train(tmp_path / "a", checkpointing=False, gpu=whole)
    b, loss_b = _train(tmp_path / "b", checkpointing=False, gpu=micro)
    assert loss_b == pytest.approx(loss_a, rel=1e-5)
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.allclose(x, y, atol=1e-5)


def _spec(tmp_path: Path, **gpu: Any) -> JobSpec:
    return JobSpec(job_id=1, snapshot_id="s", snapshot_dir=tmp_path, target=EMBEDDED_TARGET, strategy="cpt-lora",
                   train_lang="en", gpu=GpuSettings(**gpu), data_dir=tmp_path, artifacts_dir=tmp_path)


def test_out_of_memory_retries_at_half_the_size_until_none_is_left(tmp_path: Path) -> None:
    assert oom_retry(OutOfMemory("x", where="train", batch_size=8), _spec(tmp_path)) == RetryWith(micro_batch_size=4)
    assert oom_retry(OutOfMemory("x", where="train", batch_size=1), _spec(tmp_path)) is None
    fixed = _spec(tmp_path, eval_batch_size=16)
    assert oom_retry(OutOfMemory("x", where="eval", batch_size=16), fixed) == RetryWith(eval_batch_size=8)
    assert oom_retry(OutOfMemory("x", where="eval", batch_size=1), _spec(tmp_path)) is None  # automatic: halved already
    assert oom_retry(OutOfMemory("x", where="load"), _spec(tmp_path)) is None
