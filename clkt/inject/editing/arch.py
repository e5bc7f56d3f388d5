"""Where an edit goes, per architecture: the decoder layers and each layer's MLP down-projection (the `W_out` that
MEMIT edits: its input is the key `k`, its output is added to the residual stream).

Known layouts (`config.model_type`): Llama and SmolLM (`llama`), Qwen2/Qwen3 (`qwen2`, `qwen3`), Mistral
(`mistral`), Gemma 1/2/3 (`gemma`, `gemma2`, `gemma3_text`, and `gemma3`, whose text model sits under
`language_model`; in Gemma 2/3 an RMSNorm sits between the projection and the residual stream, which the
update inverts: `clkt.inject.editing.memit_update.through_norm`). Another architecture is refused with one line naming it and the known ones: an edit of a
module that is not the MLP's output projection would be silently wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clkt.errors import UserError

__all__ = ["ARCHITECTURES", "MlpLayout", "down_proj", "layer_module", "mlp_layout", "num_layers", "post_norm"]


@dataclass(frozen=True, slots=True)
class MlpLayout:
    """Module paths (from the causal LM) of one architecture, `{}` for the layer index."""

    layer: str  # the decoder layer: its output is the residual stream after that layer
    down_proj: str  # the MLP's output projection (nn.Linear, weight shape (d_model, d_ff))
    # Gemma 2/3: an RMSNorm between the projection and the residual stream (its scale is 1 + weight)
    post_norm: str | None = None


_PLAIN = MlpLayout(layer="model.layers.{}", down_proj="model.layers.{}.mlp.down_proj")
_GEMMA_NORMED = MlpLayout(layer="model.layers.{}", down_proj="model.layers.{}.mlp.down_proj",
                          post_norm="model.layers.{}.post_feedforward_layernorm")
_GEMMA3_MM = MlpLayout(layer="model.language_model.layers.{}", down_proj="model.language_model.layers.{}.mlp.down_proj",
                       post_norm="model.language_model.layers.{}.post_feedforward_layernorm")

ARCHITECTURES: dict[str, MlpLayout] = {
    "llama": _PLAIN,
    "qwen2": _PLAIN,
    "qwen3": _PLAIN,
    "mistral": _PLAIN,
    "gemma": _PLAIN,
    "gemma2": _GEMMA_NORMED,
    "gemma3_text": _GEMMA_NORMED,
    "gemma3": _GEMMA3_MM,
}


def _unwrap(model: Any) -> Any:
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def mlp_layout(model: Any) -> MlpLayout:
    """The layout of `model`'s architecture (`UserError`, one line, when knowledge editing cannot locate its MLP)."""
    kind = getattr(getattr(_unwrap(model), "config", None), "model_type", None)
    layout = ARCHITECTURES.get(str(kind))
    if layout is None:
        raise UserError(f"knowledge editing cannot locate the MLP of architecture {kind!r}; "
                        f"known: {', '.join(sorted(ARCHITECTURES))}")
    return layout


def _get(model: Any, path: str) -> Any:
    try:
        return _unwrap(model).get_submodule(path)
    except AttributeError as e:
        raise UserError(f"knowledge editing: {type(_unwrap(model)).__name__} has no module {path}") from e


def layer_module(model: Any, layer: int) -> Any:
    """Decoder layer `layer` of `model`."""
    return _get(model, mlp_layout(model).layer.format(layer))


def down_proj(model: Any, layer: int) -> Any:
    """The MLP output projection of layer `layer` (an `nn.Linear` without bias)."""
    return _get(model, mlp_layout(model).down_proj.format(layer))


def post_norm(model: Any, layer: int) -> Any | None:
    """The RMSNorm between layer `layer`'s down-projection and the residual stream (Gemma 2/3), else None."""
    path = mlp_layout(model).post_norm
    return _get(model, path.format(layer)) if path is not None else None


def num_layers(model: Any) -> int:
    cfg = _unwrap(model).config
    cfg = getattr(cfg, "text_config", None) or cfg
    return int(cfg.num_hidden_layers)
