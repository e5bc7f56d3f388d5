"""Resolve a target model to something transformers can load offline, and load it.

`TargetSettings.model` is `embedded:<name>` (a bundled model, converted once under `<data_dir>/models/`),
a local folder, or a Hugging Face id (which must already be in the local cache when offline).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clkt.errors import ModelUnavailableError
from clkt.targets.embedded import EMBEDDED_PREFIX, embedded_model, ensure_converted

if TYPE_CHECKING:
    import torch

    from clkt.config import TargetSettings

__all__ = ["cached_target", "clear_cache", "default_dtype", "load_target", "resolve_device", "resolve_target"]

log = logging.getLogger(__name__)


def resolve_target(target: TargetSettings, data_dir: Path) -> Path | str:
    """A local transformers folder (Path) or a Hugging Face id (str) for `target`."""
    model = target.model
    if model.startswith(EMBEDDED_PREFIX):
        return ensure_converted(embedded_model(model), Path(data_dir) / "models")
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelUnavailableError(f"target {target.name}: {path} is not a transformers model folder (no config.json)")
        return path
    if model.startswith((".", "/", "~")):
        raise ModelUnavailableError(f"target {target.name}: the model folder {model} does not exist")
    try:  # prefer the cached snapshot: works with HF_HUB_OFFLINE=1 and never touches the network
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001  # not cached (or not a valid id): let from_pretrained try, and explain if it fails
        return model


def resolve_device(device: str) -> str:
    """`auto` -> `cuda` when a GPU is visible, else `cpu`; anything else unchanged."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> torch.dtype:
    import torch

    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def load_target(
    target: TargetSettings, *, data_dir: Path, device: str = "cpu", dtype: torch.dtype | None = None
) -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode on `device`; the tokenizer pads on the left and has a pad token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = resolve_target(target, data_dir)
    device = resolve_device(device)
    dtype = dtype or default_dtype(device)
    try:
        tok = AutoTokenizer.from_pretrained(str(where))
        model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(str(where), dtype=dtype)
    except (OSError, ValueError) as e:
        if isinstance(where, str):
            raise ModelUnavailableError(
                f"target {target.name}: the model {where!r} cannot be loaded offline: it is neither a local folder "
                f"nor in the Hugging Face cache (download it first with `huggingface-cli download {where}` on a "
                f"machine with network access, or point `model` at a local folder)"
            ) from e
        raise ModelUnavailableError(f"target {target.name}: cannot load {where}: {e}") from e
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.to(device)
    model.eval()
    return model, tok


_CACHE: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_CACHE_LOCK = threading.Lock()
CACHE_SIZE = 2  # models kept per process (probe: a couple of targets)


def cached_target(target: TargetSettings, *, data_dir: Path, device: str = "cpu") -> tuple[Any, Any]:
    """`load_target` once per (model, data dir, device) per process (the probe stage's cache)."""
    device = resolve_device(device)
    key = (target.model, str(Path(data_dir).resolve()), device)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            while len(_CACHE) >= CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            hit = load_target(target, data_dir=data_dir, device=device)
            _CACHE[key] = hit
        return hit


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()
