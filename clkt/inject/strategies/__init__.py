"""Injection strategies: one module each, registered once by name (`injector_for(name)`).

- `cpt-lora` (default, `cpt_lora.py`): continual pretraining, next-token loss on the unmodified train-language
  documents, with LoRA (the paper's r16 / α32 / dropout 0.1 on the attention projections unless configured).
- `sft-lora` (`sft_lora.py`): supervised pairs built from the documents alone ("Tell me about <entity>." -> the
  document; the loss is on the document only). Test questions are never seen.
- `full-ft` (`full_ft.py`): every weight trains (small models; its own, lower learning rate).

The three train: each is a `TrainingRecipe` (`_recipe.py`) inside the one injector that owns epochs, validation,
the best epoch and pruning (`_trained.py`). Every strategy is an `Injector` (`clkt.inject.injector`).

A new strategy is one module here, `<name with - as _>.py`, that ends with
`INJECTOR = register_injector(MyInjector())`, plus its name's entry in `clkt.config.strategies`
(`BUILTIN_STRATEGIES`): the config accepts it, the job finds it (`injector_for` imports the module on first
use), the report names it. Nothing else changes.
"""

from __future__ import annotations

from clkt.errors import UserError
from clkt.inject.strategies._lora import ATTENTION_MODULES, LoraRecipe
from clkt.inject.strategies._recipe import TrainExample, TrainingRecipe, tokenize_documents
from clkt.inject.strategies._registry import INJECTORS, InjectorRegistry, injector_for, module_for, register_injector
from clkt.inject.strategies._trained import TrainedInjector, enable_checkpointing
from clkt.inject.strategies.cpt_lora import CptLora
from clkt.inject.strategies.full_ft import FullFinetune
from clkt.inject.strategies.sft_lora import TELL_ME, SftLora

__all__ = [
    "ATTENTION_MODULES",
    "INJECTORS",
    "TELL_ME",
    "CptLora",
    "FullFinetune",
    "InjectorRegistry",
    "LoraRecipe",
    "SftLora",
    "TrainExample",
    "TrainedInjector",
    "TrainingRecipe",
    "enable_checkpointing",
    "get_recipe",
    "injector_for",
    "module_for",
    "register_injector",
    "tokenize_documents",
]


def get_recipe(name: str) -> TrainingRecipe:
    """The training recipe of strategy `name` (`UserError` when it is unknown or does not train)."""
    injector = injector_for(name)
    if not isinstance(injector, TrainedInjector):
        raise UserError(f"strategy {name!r} does not train: it has no training recipe")
    return injector.recipe
