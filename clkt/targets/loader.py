"""Resolve a target model to something transformers can load offline, and load it.

`TargetSettings.model` is `embedded:<name>` (a bundled model, converted once under `<data_dir>/models/`),
a local folder, or a Hugging Face id (which must already be in the local cache when offline).

The probe stage's models live in one process-wide least-recently-used cache (`MODEL_CACHE`): at most
`gpu.probe_cache_size` targets, and at most `gpu.probe_cache_gb` of weights when set, on the probe's device
(`probe_device`: a GPU no job trains on when the machine has more than one, else the first training device,
shared: then those two bounds are the probe's share of its memory, plus one generation batch).
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clkt.errors import ModelUnavailableError, UserError
from clkt.layout import MODELS_DIR
from clkt.targets.embedded import EMBEDDED_PREFIX, check_embedded, embedded_model, ensure_converted

if TYPE_CHECKING:
    import torch

    from clkt.config import GpuSettings, TargetSettings

__all__ = [
    "MODEL_CACHE", "ModelCache", "cached_target", "check_attention", "check_local_target", "clear_cache", "contiguous_head",
    "default_dtype", "load_target",
    "probe_device", "resolve_device", "resolve_target",
]

PROBE_EXCEPT = "auto-except:"  # `probe_device`'s deferred choice: a CUDA device not among the listed ones

log = logging.getLogger(__name__)


def _local_folder(target: TargetSettings) -> Path | None:
    """The transformers folder `target.model` names, None when it names no folder (a Hugging Face id), or
    `ModelUnavailableError` for a path that does not exist or is not a model folder."""
    model = target.model
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelUnavailableError(f"target {target.name}: {path} is not a transformers model folder (no config.json)")
        return path
    if model.startswith((".", "/", "~")):
        raise ModelUnavailableError(f"target {target.name}: the model folder {model} does not exist")
    return None


def check_local_target(target: TargetSettings, data_dir: Path) -> None:
    """The start-up check of a local target (`backend = "local"`), reading only: a bundled model is installed, a
    folder exists and holds a transformers model, a Hugging Face id is in the local cache (nothing downloads at run
    time). `ModelUnavailableError` naming the target and what to do otherwise; other backends pass."""
    if target.backend != "local":
        return
    if target.model.startswith(EMBEDDED_PREFIX):
        check_embedded(target.model, Path(data_dir) / MODELS_DIR)
        return
    if _local_folder(target) is not None:
        return
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(target.model, "config.json")
    except ValueError:  # huggingface_hub's HFValidationError: not a repo id either
        cached = None
    if not isinstance(cached, str):
        raise ModelUnavailableError(
            f"target {target.name}: {target.model!r} is neither a local model folder nor a Hugging Face id in the "
            f"local cache (download it first: `hf download {target.model}`, or name its folder)")


def resolve_target(target: TargetSettings, data_dir: Path) -> Path | str:
    """A local transformers folder (Path) or a Hugging Face id (str) for `target`."""
    model = target.model
    if model.startswith(EMBEDDED_PREFIX):
        return ensure_converted(embedded_model(model), Path(data_dir) / MODELS_DIR)
    path = _local_folder(target)
    if path is not None:
        return path
    try:  # prefer the cached snapshot: works with HF_HUB_OFFLINE=1 and never touches the network
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001  # not cached (or not a valid id): let from_pretrained try, and explain if it fails
        return model


def resolve_device(device: str) -> str:
    """`auto` -> `cuda` when a GPU is visible, else `cpu`; a `probe_device` choice -> its device; anything else
    unchanged."""
    if device.startswith(PROBE_EXCEPT):
        return _free_cuda_device(device.removeprefix(PROBE_EXCEPT).split(","))
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def probe_device(gpu: GpuSettings) -> str:
    """Where the probe stage runs local targets: `gpu.probe_device` when set; with the Ray engine (jobs train on
    the cluster) the first of `gpu.devices`; else a CUDA device that no job trains on when the machine has more
    than one, or the first training device, shared (decided when the probe first loads a model)."""
    if gpu.probe_device:
        return gpu.probe_device
    if gpu.engine != "local" or all(d == "cpu" for d in gpu.devices):
        return gpu.devices[0]
    return PROBE_EXCEPT + ",".join(gpu.devices)


def _cuda_index(device: str, count: int) -> int | None:
    if device in ("auto", "cuda"):
        return 0 if count else None
    if device.startswith("cuda:") and device[5:].isdigit():
        return int(device[5:])
    return None


def _free_cuda_device(training: list[str]) -> str:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count > 1:
        busy = {i for d in training if (i := _cuda_index(d, count)) is not None}
        free = [i for i in range(count) if i not in busy]
        if free:
            return f"cuda:{free[0]}"
    return resolve_device(training[0])


def check_attention(implementation: str | None) -> None:
    """A clear error when `implementation` needs a package this machine lacks (before any weight is read)."""
    if implementation == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        raise UserError(f'attn_implementation = "flash_attention_2" needs the flash-attn package, which is not '
                        f'installed on {socket.gethostname()} (pip install flash-attn), or use "sdpa"')


def default_dtype(device: str) -> torch.dtype:
    import torch

    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def load_target(
    target: TargetSettings, *, data_dir: Path, device: str = "cpu", dtype: torch.dtype | None = None,
    attn_implementation: str | None = None,
) -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode on `device`; the tokenizer pads on the left and has a pad token.
    `attn_implementation`: "sdpa", "eager", "flash_attention_2" (None: transformers' choice for the model)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    check_attention(attn_implementation)
    where = resolve_target(target, data_dir)
    device = resolve_device(device)
    dtype = dtype or default_dtype(device)
    extra: dict[str, Any] = {"attn_implementation": attn_implementation} if attn_implementation else {}
    try:
        tok = AutoTokenizer.from_pretrained(str(where))
        model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(str(where), dtype=dtype, **extra)
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
    contiguous_head(model)
    return model, tok


def contiguous_head(model: Any) -> None:
    """Hand the output head (the vocabulary's logits) contiguous hidden states.

    transformers computes the logits of the last position only (`logits_to_keep=1`: the probe's prefill, the
    option scorer's passes) on a strided slice of the hidden states; `torch.matmul` then multiplies the slice
    by the head's weight as a batched product over a broadcast weight, reading the whole weight once per row,
    whenever the weight does not require grad: a frozen model, a LoRA's base during its validation, the merged
    model after training. On Gemma 3 270M (a 262k x 640 head), 1 thread, 48 option-loglik rows: 17.4 s with the
    weight requiring grad, 30.0 s frozen, 18.1 s frozen with this hook, the same log-likelihoods. The weights
    are the same; the hook stays with the module (merged adapters keep it)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or getattr(head, "_clkt_contiguous", False):
        return

    def hook(_module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (args[0].contiguous(), *args[1:]) if args else args

    head.register_forward_pre_hook(hook)
    head._clkt_contiguous = True


class ModelCache:
    """Loaded targets by (model, data dir, device), least recently used evicted first: at most `size` of them and,
    when `max_bytes` is set, at most that many bytes of weights (a model bigger than the bound alone is kept,
    alone). Thread-safe (the probe loads models from worker threads)."""

    def __init__(self, *, size: int = 2, max_bytes: int | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._models: OrderedDict[tuple[str, str, str], tuple[Any, Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def configure(self, *, size: int, max_bytes: int | None) -> None:
        with self._lock:
            self.size, self.max_bytes = size, max_bytes
            self._evict(0)

    def resident(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return list(self._models)

    def get(self, target: TargetSettings, *, data_dir: Path, device: str) -> tuple[Any, Any]:
        device = resolve_device(device)
        key = (target.model, str(Path(data_dir).resolve()), device)
        with self._lock:
            hit = self._models.get(key)
            if hit is not None:
                self._models.move_to_end(key)
                return hit[0], hit[1]
            model, tok = load_target(target, data_dir=data_dir, device=device)
            nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
            self._evict(nbytes)
            self._models[key] = (model, tok, nbytes)
            log.info("probe model cache: %s on %s (%d resident)", target.model, device, len(self._models))
            return model, tok

    def _evict(self, incoming: int) -> None:
        def over() -> bool:
            if len(self._models) + (1 if incoming else 0) > self.size:
                return True
            used = sum(n for _, _, n in self._models.values()) + incoming
            return self.max_bytes is not None and used > self.max_bytes

        while self._models and over():
            key, _ = self._models.popitem(last=False)
            log.info("probe model cache: evicted %s on %s", key[0], key[2])

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


MODEL_CACHE = ModelCache()  # the probe stage's, one per process (`clkt.services` sizes it from `[gpu]`)


def cached_target(target: TargetSettings, *, data_dir: Path, device: str = "cpu") -> tuple[Any, Any]:
    """`load_target` once per (model, data dir, device) per process (the probe stage's cache, `MODEL_CACHE`)."""
    return MODEL_CACHE.get(target, data_dir=data_dir, device=device)


def clear_cache() -> None:
    MODEL_CACHE.clear()
