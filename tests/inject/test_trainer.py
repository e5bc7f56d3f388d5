"""The training loop on a tiny torch module (no model download): NaN detection and exact resume."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from clkt.config import GpuSettings
from clkt.errors import UserError
from clkt.inject.strategies import FullFinetune, SftLora, TrainExample, get_recipe, tokenize_documents
from clkt.inject.trainer import TrainingDiverged, TrainLoop, completed_epochs
from clkt.snapshots.layout import DocRow


class Tiny(torch.nn.Module):
    def __init__(self, *, nan_at: int | None = None) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(32, 4)
        self.head = torch.nn.Linear(4, 32)
        self.calls = 0
        self.nan_at = nan_at

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor, use_cache: bool = False) -> SimpleNamespace:
        self.calls += 1
        logits = self.head(self.emb(input_ids))[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 32), labels[:, 1:].reshape(-1), ignore_index=-100)
        if self.nan_at is not None and self.calls >= self.nan_at:
            loss = loss * float("nan")
        return SimpleNamespace(loss=loss)


EXAMPLES = [TrainExample([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), TrainExample([6, 7, 8], [-100, 7, 8]), TrainExample([9, 10, 11, 12], [9, 10, 11, 12])]


def _loop(model: Tiny, root: Path, epochs: int) -> TrainLoop:
    gpu = GpuSettings(epochs=epochs, full_ft_learning_rate=0.05, seed=3)
    return TrainLoop(model=model, strategy=FullFinetune(), examples=EXAMPLES, gpu=gpu, ckpt_root=root, pad_id=0, device="cpu")


def test_nan_loss_raises_training_diverged(tmp_path: Path) -> None:
    with pytest.raises(TrainingDiverged, match="epoch 1"):
        _loop(Tiny(nan_at=2), tmp_path, 1).run()
    assert completed_epochs(tmp_path) == []  # no checkpoint of a diverged epoch


def test_resume_after_an_epoch_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    torch.manual_seed(0)
    straight = Tiny()
    init = {k: v.clone() for k, v in straight.state_dict().items()}
    res = _loop(straight, tmp_path / "a", 3).run()
    assert [r.epoch for r in res] == [1, 2, 3]

    # a job killed right after its first checkpoint: one epoch of the 3-epoch schedule, then gone
    first = Tiny()
    first.load_state_dict(init)
    loop = _loop(first, tmp_path / "b", 3)
    opt, sched = loop._optimizer()
    loop._checkpoint(loop._epoch(1, opt, sched), opt, sched)
    resumed = Tiny()  # a fresh process: weights come from the checkpoint
    again = _loop(resumed, tmp_path / "b", 3).run()
    assert [r.epoch for r in again] == [1, 2, 3]
    for k, v in straight.state_dict().items():
        assert torch.allclose(v, resumed.state_dict()[k], atol=1e-6), k
    assert again[-1].loss == pytest.approx(res[-1].loss, abs=1e-6)


class CharTok:
    eos_token_id = 1

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = [2 + (ord(c) % 20) for c in text]
        return {"input_ids": ([0] if add_special_tokens else []) + ids}


def _doc(text: str, name: str = "Velmora") -> DocRow:
    return DocRow(entity_id=1, domain="movies", source="x", lang="en", name=name, text=text)


def test_documents_truncated_or_packed() -> None:
    docs = [_doc("abcdef"), _doc("xyz")]
    plain = tokenize_documents(docs, CharTok(), max_len=5, packing=False)
    assert [len(e.input_ids) for e in plain] == [5, 5] and plain[0].labels == plain[0].input_ids
    packed = tokenize_documents(docs, CharTok(), max_len=4, packing=True)
    assert [len(e.input_ids) for e in packed] == [4, 4, 4]  # 13 tokens: a last block of 1 has nothing to predict


def test_sft_pairs_come_from_documents_and_mask_the_prompt() -> None:
    from clkt.config import EMBEDDED_TARGET

    (ex,) = SftLora().examples([_doc("abc")], CharTok(), target=EMBEDDED_TARGET, gpu=GpuSettings())
    prompt_len = len(CharTok()("Tell me about Velmora.\n")["input_ids"])
    assert ex.labels[:prompt_len] == [-100] * prompt_len
    assert ex.labels[prompt_len:] == CharTok()("abc", add_special_tokens=False)["input_ids"] + [1]


def test_unknown_strategy() -> None:
    with pytest.raises(UserError, match="cpt-lora"):
        get_recipe("magic")


def _tiny_llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=32)
    return LlamaForCausalLM(cfg)


def _lora_wrapped(model: torch.nn.Module) -> set[str]:
    return {name.rsplit(".", 1)[-1] for name, mod in model.named_modules() if hasattr(mod, "lora_A") and mod.lora_A}


def test_lora_on_every_linear_layer_or_the_attention_only() -> None:
    strategy = get_recipe("cpt-lora")
    attention = _lora_wrapped(strategy.prepare(_tiny_llama(), GpuSettings()))
    assert attention == {"q_proj", "k_proj", "v_proj", "o_proj"}
    every = _lora_wrapped(strategy.prepare(_tiny_llama(), GpuSettings(target_modules="all-linear")))
    assert every == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}  # not lm_head
    named = _lora_wrapped(strategy.prepare(_tiny_llama(), GpuSettings(target_modules=["down_proj"])))
    assert named == {"down_proj"}
