"""A training recipe: the parts of a strategy that trains which differ between strategies.

A recipe turns documents into `TrainExample`s, prepares the model (wraps it with peft or unfreezes it), names its
learning rate and saves/loads the trainable weights of one epoch's checkpoint as safetensors. The loop around it
(epochs, validation, the best epoch, pruning, resuming) is one for every recipe:
`clkt.inject.strategies._trained.TrainedInjector`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.config import GpuSettings, TargetSettings
    from clkt.facts import EntityFacts
    from clkt.snapshots.layout import DocRow

__all__ = ["WEIGHTS_FILE", "TrainExample", "TrainingRecipe", "prompt_and_answer", "tokenize_documents"]

WEIGHTS_FILE = "model.safetensors"  # full-ft's weights (a LoRA adapter is peft's adapter_model.safetensors)


@dataclass(frozen=True, slots=True)
class TrainExample:
    input_ids: list[int]
    labels: list[int]  # -100 where no loss is taken


class TrainingRecipe(Protocol):
    name: str
    keep_every_epoch: ClassVar[bool]  # False: only the best and the last epoch's weights are kept (large checkpoints)
    weights_travel: ClassVar[bool]  # False: a cluster run leaves its *.safetensors on the node (as large as the model)

    def examples(
        self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings,
        facts: Mapping[int, EntityFacts] | None = None,
    ) -> list[TrainExample]: ...

    def prepare(self, model: Any, gpu: GpuSettings) -> Any: ...

    def learning_rate(self, gpu: GpuSettings) -> float: ...

    def save(self, model: Any, path: Path) -> None: ...

    def load(self, model: Any, path: Path) -> None: ...

    def for_inference(self, model: Any) -> Any: ...


def tokenize_documents(docs: list[DocRow], tokenizer: Any, *, max_len: int, packing: bool) -> list[TrainExample]:
    """BOS + text + EOS per document, truncated to `max_len` (or packed into `max_len` blocks)."""
    streams: list[list[int]] = []
    for d in docs:
        ids = tokenizer(d.text, add_special_tokens=True)["input_ids"]
        if tokenizer.eos_token_id is not None:
            ids = [*ids, tokenizer.eos_token_id]
        streams.append(list(ids))
    if packing:
        flat = [t for s in streams for t in s]
        blocks = [flat[i : i + max_len] for i in range(0, len(flat), max_len)]
        return [TrainExample(b, list(b)) for b in blocks if len(b) > 1]
    return [TrainExample(s[:max_len], s[:max_len]) for s in streams if len(s) > 1]


def prompt_and_answer(tokenizer: Any, prompt: str, answer: str, *, add_special_tokens: bool) -> TrainExample:
    """The prompt's tokens without loss, then the answer's and EOS with it; untruncated (the caller decides what a
    pair longer than its limit becomes)."""
    p_ids = list(tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"])
    a_ids = list(tokenizer(answer, add_special_tokens=False)["input_ids"])
    if tokenizer.eos_token_id is not None:
        a_ids.append(tokenizer.eos_token_id)
    return TrainExample(p_ids + a_ids, [-100] * len(p_ids) + a_ids)
