"""How a prompt reaches a target model: its chat template (instruct models) or plain text (base models).

Base checkpoints often inherit a chat template they were never trained on, so the template is used only
when the target is declared `kind = "instruct"` *and* its tokenizer has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clkt.config import TargetSettings

__all__ = ["RenderedPrompt", "encode_left_padded", "render_prompt", "uses_chat_template"]


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    text: str
    add_special_tokens: bool  # False when the chat template already put BOS & co. in the text


def uses_chat_template(target: TargetSettings, tokenizer: Any) -> bool:
    return target.kind == "instruct" and bool(getattr(tokenizer, "chat_template", None))


def render_prompt(target: TargetSettings, tokenizer: Any, text: str) -> RenderedPrompt:
    if uses_chat_template(target, tokenizer):
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        return RenderedPrompt(text=str(chat), add_special_tokens=False)
    return RenderedPrompt(text=text, add_special_tokens=True)


def encode_left_padded(tokenizer: Any, prompts: list[RenderedPrompt], *, max_length: int | None = None) -> Any:
    """A left-padded batch (input_ids, attention_mask) of rendered prompts (all of one kind)."""
    add = prompts[0].add_special_tokens if prompts else True
    tokenizer.padding_side = "left"
    kwargs: dict[str, Any] = {}
    if max_length is not None:  # keep the end of an over-long prompt: the question and "Answer:" live there
        tokenizer.truncation_side = "left"
        kwargs = {"truncation": True, "max_length": max_length}
    return tokenizer(
        [p.text for p in prompts], return_tensors="pt", padding=True, add_special_tokens=add, **kwargs
    )
