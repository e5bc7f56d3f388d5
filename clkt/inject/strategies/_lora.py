"""The LoRA half of the `cpt-lora` and `sft-lora` recipes: the paper's r16 / α32 / dropout 0.1 on the attention
projections unless configured (`[gpu] lora_*`, `target_modules`), the adapter saved as peft's safetensors and
merged into the weights for scoring."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from clkt.errors import UserError

if TYPE_CHECKING:
    from clkt.config import GpuSettings

__all__ = ["ADAPTER_FILE", "ATTENTION_MODULES", "LoraRecipe"]

ATTENTION_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj"]
ADAPTER_FILE = "adapter_model.safetensors"


def _target_modules(gpu: GpuSettings) -> list[str] | str:
    """The configured LoRA target modules: a list of module names, peft's "all-linear", or the attention."""
    if gpu.target_modules == "all-linear":
        return "all-linear"
    return list(gpu.target_modules or ATTENTION_MODULES)


class LoraRecipe:
    """Everything of a LoRA recipe but its examples."""

    name: str  # the recipe's strategy name (each recipe's own)
    keep_every_epoch: ClassVar[bool] = True
    weights_travel: ClassVar[bool] = True  # an adapter is small

    def prepare(self, model: Any, gpu: GpuSettings) -> Any:
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(
            r=gpu.lora_r, lora_alpha=gpu.lora_alpha, lora_dropout=gpu.lora_dropout, bias="none",
            target_modules=_target_modules(gpu), task_type="CAUSAL_LM",
        )
        try:
            return get_peft_model(model, cfg)
        except ValueError as e:  # target modules that the architecture does not have
            raise UserError(f"LoRA target modules {cfg.target_modules} do not fit this model: {e}") from e

    def learning_rate(self, gpu: GpuSettings) -> float:
        return gpu.learning_rates.get(self.name, gpu.learning_rate)

    def save(self, model: Any, path: Path) -> None:
        model.save_pretrained(str(path), safe_serialization=True)

    def load(self, model: Any, path: Path) -> None:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(model, load_file(str(path / ADAPTER_FILE)))

    def for_inference(self, model: Any) -> Any:
        return model.merge_and_unload()  # plain weights: faster scoring
