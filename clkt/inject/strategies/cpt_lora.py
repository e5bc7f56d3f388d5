"""`cpt-lora` (the default): continual pretraining, next-token loss on the unmodified train-language documents,
with LoRA (`clkt.inject.strategies._lora`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clkt.inject.strategies._lora import LoraRecipe
from clkt.inject.strategies._recipe import TrainExample, tokenize_documents
from clkt.inject.strategies._registry import register_injector
from clkt.inject.strategies._trained import TrainedInjector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.config import GpuSettings, TargetSettings
    from clkt.facts import EntityFacts
    from clkt.snapshots.layout import DocRow

__all__ = ["INJECTOR", "CptLora"]


class CptLora(LoraRecipe):
    name = "cpt-lora"

    def examples(
        self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings,
        facts: Mapping[int, EntityFacts] | None = None,
    ) -> list[TrainExample]:
        return tokenize_documents(docs, tokenizer, max_len=gpu.max_seq_len, packing=gpu.packing)


INJECTOR = register_injector(TrainedInjector(CptLora()))
