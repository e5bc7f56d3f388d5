"""Writing a result pack and reading one back, verified (the format: `clkt.packs.format`).

`write_pack` writes the three files, and `locality.jsonl` when there are locality answers (into a folder,
atomically, or as one `.tar.gz` when `out` ends so); `read_pack` takes a folder or an archive (extracted safely
into a temporary folder, `clkt.packs.archive`) and refuses, with one line (`UserError`), a pack of a newer format
version, a missing, truncated, extra or linked file, a file whose sha256 is not the manifest's, or a line that is
not a `PredictionRow` (in `locality.jsonl`: a `LocalityRow`, whose split must be `locality`). A pack without
`locality.jsonl` (every pack written before it existed) reads with no locality answers; `probe.jsonl` (the model's
probe answers, `ProbeRow`) likewise, and one the manifest lists larger than `PROBE_MAX_BYTES` is refused before it
is read; `open_answers.jsonl` (the open track's answers, `OpenAnswerRow`, format version 2) likewise, with
`OPEN_MAX_BYTES`, and an answer longer than `OPEN_ANSWER_MAX_CHARS` refused naming its line. What it
returns is what the files say: whether it fits a snapshot is `clkt.packs.intake`'s question.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from clkt.errors import UserError
from clkt.packs.archive import SafeExtract, is_archive, write_archive
from clkt.packs.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    LOCALITY_FILE,
    MANIFEST_FILE,
    METRICS_FILE,
    OPEN_ANSWER_MAX_CHARS,
    OPEN_FILE,
    OPEN_FILE_VERSION,
    OPEN_MAX_BYTES,
    PREDICTIONS_FILE,
    PROBE_FILE,
    PROBE_MAX_BYTES,
    FileEntry,
    LocalityRow,
    OpenAnswerRow,
    PackManifest,
    PredictionRow,
    ProbeRow,
)

__all__ = ["Pack", "canonical", "open_jsonl", "open_key", "pack_bytes", "probe_jsonl", "read_pack", "rows_jsonl", "sort_key",
           "write_pack"]

_R = TypeVar("_R", bound=BaseModel)


@dataclass(frozen=True, kw_only=True)
class Pack:
    """A verified pack: its manifest, predictions and the metrics it claims (as JSON, unchecked)."""

    source: Path
    sha256: str  # the pack's identity: the sha256 of its manifest.json
    manifest: PackManifest
    predictions: list[PredictionRow]
    claimed_metrics: dict[str, Any]
    locality: list[LocalityRow] = field(default_factory=list)  # the locality split's answers (none: no such file)
    probe: list[ProbeRow] = field(default_factory=list)  # the model's probe answers (none: no such file)
    open_answers: list[OpenAnswerRow] = field(default_factory=list)  # the open track's answers (none: no open track)


def canonical(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def sort_key(r: PredictionRow) -> tuple[str, str, str, str, int]:
    return (r.train_lang, r.scorer, r.variant, r.lang, r.qid)


def rows_jsonl(rows: Sequence[PredictionRow]) -> bytes:
    """Rows as the pack writes them: one canonical JSON object a line, in `sort_key` order."""
    return "".join(canonical(r.model_dump(mode="json")) + "\n" for r in sorted(rows, key=sort_key)).encode()


def probe_jsonl(rows: Sequence[ProbeRow]) -> bytes:
    """Probe answers as the pack writes them: one canonical JSON object a line, by entity and language."""
    ordered = sorted(rows, key=lambda r: (r.entity_id, r.lang))
    return "".join(canonical(r.model_dump(mode="json")) + "\n" for r in ordered).encode()


def open_key(r: OpenAnswerRow) -> tuple[str, str, str, str, int]:
    return (r.train_lang, r.variant, r.split, r.lang, r.qid)


def open_jsonl(rows: Sequence[OpenAnswerRow]) -> bytes:
    """Open answers as the pack writes them: one canonical JSON object a line, in `open_key` order."""
    return "".join(canonical(r.model_dump(mode="json")) + "\n" for r in sorted(rows, key=open_key)).encode()


def pack_bytes(
    manifest: PackManifest, predictions: Sequence[PredictionRow], metrics: dict[str, Any],
    locality: Sequence[LocalityRow] = (), probe: Sequence[ProbeRow] = (), open_answers: Sequence[OpenAnswerRow] = (),
) -> dict[str, bytes]:
    """The pack's files as bytes (`locality.jsonl` only with locality answers, `probe.jsonl` only with probe
    answers, `open_answers.jsonl` only with open answers); `manifest.files` is replaced by the other files' hashes
    and sizes."""
    body = {
        PREDICTIONS_FILE: rows_jsonl(predictions),
        METRICS_FILE: (json.dumps(metrics, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode(),
    }
    if locality:
        body[LOCALITY_FILE] = rows_jsonl(locality)
    if probe:
        body[PROBE_FILE] = probe_jsonl(probe)
    if open_answers:
        body[OPEN_FILE] = open_jsonl(open_answers)
    files = {name: FileEntry(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)) for name, data in body.items()}
    final = manifest.model_copy(update={"files": files})
    body[MANIFEST_FILE] = (json.dumps(final.model_dump(mode="json"), ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode()
    return body


def write_pack(
    out: Path, manifest: PackManifest, predictions: Sequence[PredictionRow], metrics: dict[str, Any],
    locality: Sequence[LocalityRow] = (), probe: Sequence[ProbeRow] = (), open_answers: Sequence[OpenAnswerRow] = (),
) -> str:
    """Write the pack at `out` (a new folder, or a `.tar.gz` file); its sha256."""
    body = pack_bytes(manifest, predictions, metrics, locality, probe, open_answers)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists (choose another --out, or remove it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if is_archive(out):
        write_archive(body, out)
    else:
        if out.exists():
            out.rmdir()
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            for name, data in body.items():
                (tmp / name).write_bytes(data)
            os.replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return hashlib.sha256(body[MANIFEST_FILE]).hexdigest()


def read_pack(path: Path) -> Pack:
    """The pack at `path` (a folder or an archive), verified (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no pack at {path}")
    if path.is_file():
        if not is_archive(path):
            raise UserError(f"{path} is neither a pack folder nor a .tar.gz archive of one")
        with tempfile.TemporaryDirectory(prefix="clkt-pack-") as tmp:
            root = SafeExtract(path).extract(Path(tmp))
            return _read_folder(root, shown=path)
    return _read_folder(path, shown=path)


def _manifest(root: Path, shown: Path) -> tuple[PackManifest, bytes]:
    mpath = root / MANIFEST_FILE
    if mpath.is_symlink() or not mpath.is_file():
        raise UserError(f"pack {shown}: no {MANIFEST_FILE}")
    raw = mpath.read_bytes()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"pack {shown}: {MANIFEST_FILE} is not JSON ({e})") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise UserError(f"pack {shown}: {MANIFEST_FILE} is not a clkt result pack's (format is not {FORMAT_NAME!r})")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"pack {shown}: format_version {version!r} is not a version number")
    if version > FORMAT_VERSION:
        raise UserError(f"pack {shown} is of format version {version}, newer than this clkt reads ({FORMAT_VERSION}): "
                        "upgrade clkt to read it")
    try:
        return PackManifest.model_validate(data), raw
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"pack {shown}: invalid {MANIFEST_FILE} ({where}: {err['msg']})") from e


def _check_files(root: Path, manifest: PackManifest, shown: Path) -> None:
    present: set[str] = set()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            raise UserError(f"pack {shown}: {rel} is a link (a pack holds regular files only)")
        if p.is_file() and rel != MANIFEST_FILE:
            present.add(rel)
    for name in (PREDICTIONS_FILE, METRICS_FILE):
        if name not in manifest.files:
            raise UserError(f"pack {shown}: the manifest does not list {name}")
    for name, limit, what in ((PROBE_FILE, PROBE_MAX_BYTES, "probe answers"), (OPEN_FILE, OPEN_MAX_BYTES, "open answers")):
        entry = manifest.files.get(name)
        if entry is not None and entry.bytes > limit:
            raise UserError(f"pack {shown}: {name} is {entry.bytes:,} bytes, more than the {limit:,} a pack's {what} may be")
    if OPEN_FILE in manifest.files and manifest.format_version < OPEN_FILE_VERSION:
        raise UserError(f"pack {shown}: {OPEN_FILE} is a file of format version {OPEN_FILE_VERSION}, and the manifest "
                        f"says version {manifest.format_version}")
    extra = sorted(present - set(manifest.files))
    if extra:
        raise UserError(f"pack {shown}: extra file {extra[0]} is not listed in the manifest")
    for name, entry in sorted(manifest.files.items()):
        if name not in present:
            raise UserError(f"pack {shown}: file {name} listed in the manifest is missing")
        size = (root / name).stat().st_size
        if size < entry.bytes:
            raise UserError(f"pack {shown}: {name} is truncated ({size:,} of {entry.bytes:,} bytes)")
        h = hashlib.sha256()
        with (root / name).open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        if size != entry.bytes or h.hexdigest() != entry.sha256:
            raise UserError(f"pack {shown}: {name} does not match its sha256 in the manifest")


def _rows(root: Path, shown: Path, name: str, model: type[_R], what: str) -> list[_R]:
    rows: list[_R] = []
    with (root / name).open("r", encoding="utf-8", errors="strict") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rows.append(model.model_validate_json(line))
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                if model is OpenAnswerRow and where == "answer" and err["type"] == "string_too_long":
                    raise UserError(f"pack {shown}: {name}:{n}: {_long_answer(line)}, longer than the "
                                    f"{OPEN_ANSWER_MAX_CHARS} characters an open answer may be (refused, not cut)") from e
                raise UserError(f"pack {shown}: {name}:{n}: not {what} ({f'{where}: ' if where else ''}{err['msg']})") from e
    return rows


def _long_answer(line: str) -> str:
    """What a refusal of the too long open answer on `line` (valid JSON: pydantic read it) says of it."""
    data = json.loads(line)
    return (f"the answer to open question {data.get('qid')} in {data.get('lang')!r} is {len(str(data.get('answer'))):,} "
            "characters")


def _read_folder(root: Path, *, shown: Path) -> Pack:
    manifest, raw = _manifest(root, shown)
    _check_files(root, manifest, shown)
    try:
        predictions = _rows(root, shown, PREDICTIONS_FILE, PredictionRow, "a prediction")
        locality = _rows(root, shown, LOCALITY_FILE, LocalityRow, "a locality answer") if LOCALITY_FILE in manifest.files else []
        probe = _rows(root, shown, PROBE_FILE, ProbeRow, "a probe answer") if PROBE_FILE in manifest.files else []
        opened = _rows(root, shown, OPEN_FILE, OpenAnswerRow, "an open answer") if OPEN_FILE in manifest.files else []
        metrics = json.loads((root / METRICS_FILE).read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise UserError(f"pack {shown}: a file is not UTF-8 text ({e.reason})") from e
    except json.JSONDecodeError as e:
        raise UserError(f"pack {shown}: {METRICS_FILE} is not JSON ({e})") from e
    if not isinstance(metrics, dict):
        raise UserError(f"pack {shown}: {METRICS_FILE} is not a JSON object")
    return Pack(source=shown, sha256=hashlib.sha256(raw).hexdigest(), manifest=manifest, predictions=predictions,
                claimed_metrics=metrics, locality=locality, probe=probe, open_answers=opened)
