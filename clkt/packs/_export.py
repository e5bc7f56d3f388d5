"""A file of a stored snapshot's export folder, checked before a pack is checked against it (`clkt.packs.intake`)."""

from __future__ import annotations

from pathlib import Path

from clkt.errors import UserError
from clkt.snapshots.layout import SnapshotManifest, sha256_file

__all__ = ["check_export_file"]


def check_export_file(
    manifest: SnapshotManifest, export_path: str | None, path: Path, *, part: str, pack_file: str, shown: str,
) -> None:
    """`UserError` naming the pack (`shown`) unless `path` (under the export folder `export_path`) is on this machine
    and matches its sha256 in the snapshot's stored `manifest`; `part` names what it holds ("locality split"),
    `pack_file` the pack's file that cannot be checked without it."""
    sid, root = manifest.snapshot_id, Path(export_path or "")
    rel = path.relative_to(root).as_posix()
    if not export_path or not path.is_file():
        raise UserError(f"pack {shown}: snapshot {sid}'s {part} is not on this machine ({rel} of its export "
                        f"{export_path or '(none)'}); its {pack_file} cannot be checked")
    if manifest.files.get(rel) != sha256_file(path):
        raise UserError(f"pack {shown}: snapshot {sid}'s {rel} here does not match its sha256 in the stored manifest; "
                        f"its {pack_file} cannot be checked")
