"""Injection strategies behind one small protocol.

- `cpt-lora` (default): continual pretraining, next-token loss on the unmodified train-language documents,
  with LoRA (the paper's r16 / α32 / dropout 0.1 on the attention projections unless configured).
- `sft-lora`: supervised pairs built from the documents alone ("Tell me about <entity>." -> the document; the
  loss is on the document only). Test questions are never seen.
- `full-ft`: every weight trains (small models; its own, lower learning rate).

A strategy turns documents into `TrainExample`s, prepares the model (wraps it with peft or unfreezes it) and
saves/loads the trainable weights of one epoch's checkpoint as safetensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from clkt.errors import UserError
from clkt.targets.prompting import render_prompt

if TYPE_CHECKING:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.snapshots.layout import DocRow

__all__ = [
    "ATTENTION_MODULES",
    "STRATEGIES",
    "TELL_ME",
    "CptLora",
    "FullFinetune",
    "InjectionStrategy",
    "SftLora",
    "TrainExample",
    "get_strategy",
    "tokenize_documents",
]

ATTENTION_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj"]
WEIGHTS_FILE = "model.safetensors"

TELL_ME: dict[str, str] = {
    "en": "Tell me about {name}.", "ja": "{name}について教えてください。", "zh": "请介绍一下{name}。",
    "fr": "Parlez-moi de {name}.", "es": "Háblame de {name}.", "de": "Erzähl mir von {name}.",
    "it": "Parlami di {name}.", "pt": "Fale-me sobre {name}.", "ko": "{name}에 대해 알려 주세요.",
    "ru": "Расскажи мне о {name}.", "ar": "أخبرني عن {name}.", "hi": "{name} के बारे में बताइए।",
}


@dataclass(frozen=True, slots=True)
class TrainExample:
    input_ids: list[int]
    labels: list[int]  # -100 where no loss is taken


class InjectionStrategy(Protocol):
    name: str
    keep_every_epoch: ClassVar[bool]  # False: only the best and the last epoch's weights are kept (large checkpoints)

    def examples(self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings) -> list[TrainExample]: ...

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


def _target_modules(gpu: GpuSettings) -> list[str] | str:
    """The configured LoRA target modules: a list of module names, peft's "all-linear", or the attention."""
    if gpu.target_modules == "all-linear":
        return "all-linear"
    return list(gpu.target_modules or ATTENTION_MODULES)


class _Lora:
    keep_every_epoch: ClassVar[bool] = True

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
        return gpu.learning_rate

    def save(self, model: Any, path: Path) -> None:
        model.save_pretrained(str(path), safe_serialization=True)

    def load(self, model: Any, path: Path) -> None:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(model, load_file(str(path / "adapter_model.safetensors")))

    def for_inference(self, model: Any) -> Any:
        return model.merge_and_unload()  # plain weights: faster scoring


class CptLora(_Lora):
    name = "cpt-lora"

    def examples(self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings) -> list[TrainExample]:
        return tokenize_documents(docs, tokenizer, max_len=gpu.max_seq_len, packing=gpu.packing)


class SftLora(_Lora):
    name = "sft-lora"

    def examples(self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings) -> list[TrainExample]:
        out: list[TrainExample] = []
        for d in docs:
            ask = TELL_ME.get(d.lang, TELL_ME["en"]).format(name=d.name)
            prompt = render_prompt(target, tokenizer, ask)
            text = prompt.text if not prompt.add_special_tokens else prompt.text + "\n"
            p_ids = tokenizer(text, add_special_tokens=prompt.add_special_tokens)["input_ids"]
            a_ids = tokenizer(d.text, add_special_tokens=False)["input_ids"]
            if tokenizer.eos_token_id is not None:
                a_ids = [*a_ids, tokenizer.eos_token_id]
            ids = (list(p_ids) + list(a_ids))[: gpu.max_seq_len]
            labels = ([-100] * len(p_ids) + list(a_ids))[: gpu.max_seq_len]
            if any(t != -100 for t in labels[1:]):
                out.append(TrainExample(ids, labels))
        return out


class FullFinetune:
    name = "full-ft"
    keep_every_epoch: ClassVar[bool] = False

    def examples(self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings) -> list[TrainExample]:
        return tokenize_documents(docs, tokenizer, max_len=gpu.max_seq_len, packing=gpu.packing)

    def prepare(self, model: Any, gpu: GpuSettings) -> Any:
        for p in model.parameters():
            p.requires_grad_(True)
        return model

    def learning_rate(self, gpu: GpuSettings) -> float:
        return gpu.full_ft_learning_rate

    def save(self, model: Any, path: Path) -> None:
        from safetensors.torch import save_model

        path.mkdir(parents=True, exist_ok=True)
        save_model(model, str(path / WEIGHTS_FILE))

    def load(self, model: Any, path: Path) -> None:
        from safetensors.torch import load_model

        load_model(model, str(path / WEIGHTS_FILE))

    def for_inference(self, model: Any) -> Any:
        return model


STRATEGIES: dict[str, InjectionStrategy] = {s.name: s for s in (CptLora(), SftLora(), FullFinetune())}


def get_strategy(name: str) -> InjectionStrategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise UserError(f"unknown injection strategy {name!r}; known: {sorted(STRATEGIES)}") from None
