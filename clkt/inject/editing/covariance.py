"""The keys' second moment E[k kᵀ] at each edited layer (the `C` of MEMIT's update), from one fixed corpus.

The keys are the inputs of a layer's MLP down-projection over ordinary text: here the fixed corpus of
`clkt.inject.editing.corpus` (fictional documents in every language, the same for every snapshot; no snapshot's
documents or questions are read), so a job's edits do not depend on which job ran first. The statistics depend
on the model, the layer and the corpus, so they are computed once per model x layer x corpus and kept under
`<data_dir>/edit-stats/` (`clkt.layout.EDIT_STATS_DIR`; retention keeps the folder): one safetensors file per
model x layer x corpus whose header names what it was computed for (the format version, the model's identity,
the layer, d_ff, the corpus's name and sha256, the tokens it saw) and the sha256 of the matrix. A file that does
not read, names another model, layer, size or corpus, or whose matrix does not match its sha256 is recomputed
and replaced, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clkt.inject.editing.arch import down_proj
from clkt.inject.editing.corpus import StatsCorpus

__all__ = ["STATS_VERSION", "KeyStats", "key_stats", "model_identity", "stats_path"]

log = logging.getLogger(__name__)

STATS_VERSION = "2"  # 2: the corpus (its sha256) is part of the key
MAX_TOKENS = 100_000  # text tokens the statistics read at most
SEQ_LEN = 256  # tokens per forward pass
_TENSOR = "second_moment"


@dataclass(frozen=True, slots=True)
class KeyStats:
    layer: int
    second_moment: Any  # d_ff x d_ff, float32 on the CPU
    tokens: int
    cached: bool  # read from the cache (False: computed by this call)


def model_identity(model: Any, name: str) -> str:
    """A digest of what the statistics depend on: the model's name, its configuration and its weights' first
    and last MLP down-projections (two models saved at the same path differ there)."""
    from clkt.inject.editing.arch import num_layers

    cfg = model.config.to_dict()
    cfg.pop("_name_or_path", None)
    h = hashlib.sha256(json.dumps([name, cfg], sort_keys=True, default=str).encode())
    for layer in (0, num_layers(model) - 1):
        w = down_proj(model, layer).weight.detach().float().contiguous().cpu()
        h.update(w.numpy().tobytes())
    return h.hexdigest()


def stats_path(root: Path, name: str, identity: str, layer: int, corpus: str) -> Path:
    """The cache file of `name` (whose identity is `identity`) at `layer` over the corpus whose sha256 is `corpus`."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[-48:] or "model"
    return root / f"{slug}-{identity[:16]}-layer{layer}-corpus{corpus[:12]}.safetensors"


def _digest(m: Any) -> str:
    return hashlib.sha256(m.contiguous().numpy().tobytes()).hexdigest()


def _read(path: Path, *, identity: str, layer: int, d_ff: int, corpus: str) -> KeyStats | None:
    """The cached statistics at `path` when they are whole and for this model, layer and corpus, else None."""
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            m = f.get_tensor(_TENSOR)
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:  # a truncated or garbled file
        log.warning("edit statistics %s do not read (%s): recomputing them", path.name, e)
        return None
    want = {"version": STATS_VERSION, "identity": identity, "layer": str(layer), "d_ff": str(d_ff), "corpus_sha256": corpus}
    if any(meta.get(k) != v for k, v in want.items()) or tuple(m.shape) != (d_ff, d_ff) or meta.get("sha256") != _digest(m):
        log.warning("edit statistics %s are not this model's layer %d over this corpus (or are damaged): recomputing them",
                    path.name, layer)
        return None
    return KeyStats(layer=layer, second_moment=m, tokens=int(meta.get("tokens", "0")), cached=True)


def _write(path: Path, m: Any, *, identity: str, layer: int, tokens: int, corpus: StatsCorpus) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"version": STATS_VERSION, "identity": identity, "layer": str(layer), "d_ff": str(m.shape[0]),
            "tokens": str(tokens), "corpus": corpus.name, "corpus_sha256": corpus.sha256, "sha256": _digest(m)}
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    save_file({_TENSOR: m.contiguous()}, str(tmp), metadata=meta)
    os.replace(tmp, path)


def _compute(model: Any, tok: Any, layers: Sequence[int], texts: Sequence[str], *, device: str) -> tuple[dict[int, Any], int]:
    """E[k kᵀ] at each of `layers` over the tokens of `texts` (at most `MAX_TOKENS`), and the tokens read."""
    import torch

    acc_dtype = torch.float64 if device == "cpu" else torch.float32
    sums: dict[int, Any] = {}
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = inner.get_decoder()  # no logits: only the layers' inputs are read

    def hook_for(layer: int) -> Any:
        def pre(_m: Any, args: tuple[Any, ...]) -> None:
            k = args[0].reshape(-1, args[0].shape[-1]).to(acc_dtype)  # tokens x d_ff (one unpadded sequence)
            sums[layer] = sums[layer] + k.T @ k if layer in sums else k.T @ k
        return pre

    handles = [down_proj(model, layer).register_forward_pre_hook(hook_for(layer)) for layer in layers]
    seen = 0
    try:
        with torch.no_grad():
            for text in texts:
                ids = list(tok(text, add_special_tokens=True)["input_ids"])
                for start in range(0, len(ids), SEQ_LEN):
                    chunk = ids[start : start + SEQ_LEN][: MAX_TOKENS - seen]
                    if not chunk:
                        break
                    decoder(input_ids=torch.tensor([chunk], device=device))
                    seen += len(chunk)
                if seen >= MAX_TOKENS:
                    break
    finally:
        for h in handles:
            h.remove()
    return {layer: (sums[layer] / max(seen, 1)).float().cpu() for layer in layers if layer in sums}, seen


def key_stats(
    model: Any, tok: Any, layers: Sequence[int], *, corpus: StatsCorpus, root: Path, name: str, device: str,
) -> dict[int, KeyStats]:
    """E[k kᵀ] at each of `layers`: read from `root` when cached for this model and `corpus` (its sha256), else
    computed from `corpus` (once, for every layer missing) and cached."""
    identity = model_identity(model, name)
    out: dict[int, KeyStats] = {}
    for layer in layers:
        d_ff = down_proj(model, layer).weight.shape[1]
        path = stats_path(root, name, identity, layer, corpus.sha256)
        got = _read(path, identity=identity, layer=layer, d_ff=d_ff, corpus=corpus.sha256)
        if got is not None:
            out[layer] = got
    missing = [layer for layer in layers if layer not in out]
    if missing:
        if not any(t.strip() for t in corpus.texts):
            from clkt.errors import SnapshotError

            raise SnapshotError(f"knowledge editing: the corpus {corpus.name!r} has no text to compute the key statistics from")
        computed, seen = _compute(model, tok, missing, corpus.texts, device=device)
        for layer, m in computed.items():
            _write(stats_path(root, name, identity, layer, corpus.sha256), m, identity=identity, layer=layer, tokens=seen,
                   corpus=corpus)
            out[layer] = KeyStats(layer=layer, second_moment=m, tokens=seen, cached=False)
    return out
