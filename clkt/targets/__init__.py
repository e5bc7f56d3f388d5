"""Target models: offline resolution and loading (bundled, local folders, cached HF ids) and the probe."""

from __future__ import annotations

from clkt.targets.embedded import EMBEDDED_MODELS, EmbeddedModel, embedded_model, ensure_converted
from clkt.targets.loader import cached_target, clear_cache, load_target, resolve_device, resolve_target
from clkt.targets.prompting import RenderedPrompt, encode_left_padded, render_prompt, uses_chat_template
from clkt.targets.summary import build_probe_prompt, probe_texts

__all__ = [
    "EMBEDDED_MODELS",
    "EmbeddedModel",
    "embedded_model",
    "ensure_converted",
    "resolve_target",
    "load_target",
    "resolve_device",
    "cached_target",
    "clear_cache",
    "build_probe_prompt",
    "probe_texts",
    "RenderedPrompt",
    "render_prompt",
    "encode_left_padded",
    "uses_chat_template",
]
