"""`sft-lora`: supervised pairs built from the documents alone ("Tell me about <entity>." -> the document; the loss
is on the document only), with LoRA (`clkt.inject.strategies._lora`). Test questions are never seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clkt.inject.strategies._lora import LoraRecipe
from clkt.inject.strategies._recipe import TrainExample, prompt_and_answer
from clkt.inject.strategies._registry import register_injector
from clkt.inject.strategies._trained import TrainedInjector
from clkt.targets.prompting import render_prompt

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clkt.config import GpuSettings, TargetSettings
    from clkt.facts import EntityFacts
    from clkt.snapshots.layout import DocRow

__all__ = ["INJECTOR", "TELL_ME", "SftLora"]

TELL_ME: dict[str, str] = {
    "en": "Tell me about {name}.", "ja": "{name}について教えてください。", "zh": "请介绍一下{name}。",
    "fr": "Parlez-moi de {name}.", "es": "Háblame de {name}.", "de": "Erzähl mir von {name}.",
    "it": "Parlami di {name}.", "pt": "Fale-me sobre {name}.", "ko": "{name}에 대해 알려 주세요.",
    "ru": "Расскажи мне о {name}.", "ar": "أخبرني عن {name}.", "hi": "{name} के बारे में बताइए।",
}


class SftLora(LoraRecipe):
    name = "sft-lora"

    def examples(
        self, docs: list[DocRow], tokenizer: Any, *, target: TargetSettings, gpu: GpuSettings,
        facts: Mapping[int, EntityFacts] | None = None,
    ) -> list[TrainExample]:
        out: list[TrainExample] = []
        for d in docs:
            ask = TELL_ME.get(d.lang, TELL_ME["en"]).format(name=d.name)
            prompt = render_prompt(target, tokenizer, ask)
            text = prompt.text if not prompt.add_special_tokens else prompt.text + "\n"
            pair = prompt_and_answer(tokenizer, text, d.text, add_special_tokens=prompt.add_special_tokens)
            ids, labels = pair.input_ids[: gpu.max_seq_len], pair.labels[: gpu.max_seq_len]
            if any(t != -100 for t in labels[1:]):
                out.append(TrainExample(ids, labels))
        return out


INJECTOR = register_injector(TrainedInjector(SftLora()))
