"""Target models: offline resolution and loading (bundled, local folders, cached HF ids) and the probe."""

from __future__ import annotations

from clkt.targets.embedded import EMBEDDED_MODELS, EmbeddedModel, embedded_model, ensure_converted
from clkt.targets.loader import cached_target, clear_cache, load_target, resolve_device, resolve_target
from clkt.targets.prompting import RenderedPrompt, encode_left_padded, render_prompt, uses_chat_template
from clkt.targets.summary import build_probe_prompt, probe_texts

__all__ = [
    "EMBEDDED_MODELS",
    "EmbeddedModel",
    "RenderedPrompt",
    "build_probe_prompt",
    "cached_target",
    "clear_cache",
    "embedded_model",
    "encode_left_padded",
    "ensure_converted",
    "load_target",
    "probe_texts",
    "render_prompt",
    "resolve_device",
    "resolve_target",
    "uses_chat_template",
]
