"""What travels with a GPU job run on a cluster, and what travels back: folders packed as tar archives in memory.

Out (daemon -> worker node):
- the snapshot's export folder, whole (the job verifies every file against the manifest's sha256), once per
  snapshot into Ray's object store, shared by every job of that snapshot on a node;
- the base answers of the job's (snapshot, target) when the daemon already has them (`base_files`).

Back (worker node -> the daemon's `<data_dir>/jobs/<id>/`, `artifacts_bundle`): `outcome.json` or
`failure.json`, `predictions.jsonl`, `progress.json`, what the job's injector names in its folder
(`Injector.returned_files`; the strategies that train: every epoch's `state.json` and `val.json`, the best
epoch's LoRA adapter without its optimizer state, not full-ft's weights, as large as the model), and the
job's log (its last `LOG_TAIL_BYTES`, appended to the daemon's `job.log`); under `base/`, the base answers
the job computed, for the daemon's base cache.

Unpacking refuses members that would land outside the destination (tarfile's `data` filter).
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from clkt.errors import UserError
from clkt.inject.contract import JobSpec
from clkt.inject.strategies import injector_for
from clkt.layout import (
    CKPT_DIR,
    FAILURE_FILE,
    LOG_FILE,
    OUTCOME_FILE,
    PREDICTIONS_FILE,
    PROGRESS_FILE,
    SPEC_FILE,
)

__all__ = ["BASE_PREFIX", "LOG_TAIL_BYTES", "artifacts_bundle", "base_files", "pack", "pack_dir", "unpack", "unpack_artifacts"]

BASE_PREFIX = "base/"
LOG_TAIL_BYTES = 4 * 2**20


def pack(files: Iterable[tuple[str, bytes]]) -> bytes:
    """An uncompressed tar of (name, content) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def pack_dir(root: Path) -> bytes:
    """Every regular file under `root` (relative names)."""
    return pack((p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file())


def unpack(data: bytes, dest: Path) -> list[str]:
    """Extract into `dest` (created); returns the names extracted."""
    dest.mkdir(parents=True, exist_ok=True)
    if not data:
        return []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        tar.extractall(dest, filter="data")
    return names


def base_files(base_dir: Path | None, target: str) -> bytes:
    """The base answers of `target` cached in `base_dir` (every key: the job picks the one it needs)."""
    if base_dir is None or not base_dir.is_dir():
        return b""
    return pack((p.name, p.read_bytes()) for p in sorted(base_dir.glob(f"{target}-*.jsonl")) if p.is_file())


def _best_epoch(artifacts: Path) -> int | None:
    try:
        return int(json.loads((artifacts / OUTCOME_FILE).read_text(encoding="utf-8"))["best_epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _injector_files(artifacts: Path) -> list[Path]:
    """What the job's injector left in its folder that travels back (nothing when the spec is unreadable)."""
    try:
        spec = JobSpec.model_validate_json((artifacts / SPEC_FILE).read_bytes())
        injector = injector_for(spec.strategy)
    except (OSError, ValidationError, UserError):
        return []
    return injector.returned_files(artifacts / CKPT_DIR, best_epoch=_best_epoch(artifacts))


def artifacts_bundle(artifacts: Path, *, base_dir: Path | None = None, shipped: set[str] | None = None) -> bytes:
    """What a finished run brings back (see the module's docstring)."""
    out: list[tuple[str, bytes]] = []
    for name in (OUTCOME_FILE, FAILURE_FILE, PREDICTIONS_FILE, PROGRESS_FILE):
        f = artifacts / name
        if f.is_file():
            out.append((name, f.read_bytes()))
    log = artifacts / LOG_FILE
    if log.is_file():
        with log.open("rb") as fh:
            size = log.stat().st_size
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            out.append((LOG_FILE, fh.read()))
    out.extend((f.relative_to(artifacts).as_posix(), f.read_bytes()) for f in _injector_files(artifacts))
    if base_dir is not None and base_dir.is_dir():
        for f in sorted(base_dir.glob("*.jsonl")):
            if f.is_file() and f.name not in (shipped or set()):
                out.append((BASE_PREFIX + f.name, f.read_bytes()))
    return pack(out)


def unpack_artifacts(data: bytes, artifacts: Path, base_dir: Path | None, *, header: str = "") -> list[str]:
    """A run's bundle into the daemon's folders: base answers into `base_dir`, the log appended to `job.log`,
    the rest into `artifacts` (replacing what was there)."""
    artifacts.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            fh = tar.extractfile(m)
            if fh is None:
                continue
            content = fh.read()
            if m.name.startswith(BASE_PREFIX):
                if base_dir is not None:
                    _write(base_dir, m.name.removeprefix(BASE_PREFIX), content)
            elif m.name == LOG_FILE:
                with (artifacts / LOG_FILE).open("ab") as logf:
                    logf.write(header.encode() + content)
            else:
                _write(artifacts, m.name, content)
            names.append(m.name)
    return names


def _write(root: Path, name: str, content: bytes) -> None:
    dest = (root / name).resolve()
    if not dest.is_relative_to(root.resolve()):
        raise ValueError(f"bundle member {name!r} would land outside {root}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_bytes(content)
    tmp.replace(dest)
