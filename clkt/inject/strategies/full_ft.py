"""`full-ft`: every weight trains (small models; its own, lower learning rate, `[gpu] full_ft_learning_rate`).
Its checkpoints are as large as the model: only the best and the last epoch's weights are kept, and a cluster
run leaves them on its node."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from clkt.inject.strategies._recipe import WEIGHTS_FILE, TrainExample, tokenize_documents
from clkt.inject.strategies._registry import register_injector
from clkt.inject.strategies._trained import TrainedInjector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.config import GpuSettings, TargetSettings
    from clkt.facts import EntityFacts
    from clkt.snapshots.layout import DocRow

__all__ = ["INJECTOR", "FullFinetune"]


class FullFinetune:
    name = "full-ft"
    keep_every_epoch: ClassVar[bool] = False
    weights_travel: ClassVar[bool] = False

    def examples(
        self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings,
        facts: Mapping[int, EntityFacts] | None = None,
    ) -> list[TrainExample]:
        return tokenize_documents(docs, tokenizer, max_len=gpu.max_seq_len, packing=gpu.packing)

    def prepare(self, model: Any, gpu: GpuSettings) -> Any:
        for p in model.parameters():
            p.requires_grad_(True)
        return model

    def learning_rate(self, gpu: GpuSettings) -> float:
        return gpu.learning_rates.get(self.name, gpu.full_ft_learning_rate)

    def save(self, model: Any, path: Path) -> None:
        from safetensors.torch import save_model

        path.mkdir(parents=True, exist_ok=True)
        save_model(model, str(path / WEIGHTS_FILE))

    def load(self, model: Any, path: Path) -> None:
        from safetensors.torch import load_model

        load_model(model, str(path / WEIGHTS_FILE))

    def for_inference(self, model: Any) -> Any:
        return model


# fp32 master weights (bf16 autocast on GPU), where LoRA trains over a bf16 base on GPU
INJECTOR = register_injector(TrainedInjector(FullFinetune(), full_precision=True))
