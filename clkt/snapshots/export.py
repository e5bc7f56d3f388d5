"""Writing a snapshot's files atomically: everything goes to a hidden temporary folder next to the target,
which is renamed into place only when complete; on any failure (a crash, a full disk) the temporary
folder is removed and nothing is visible.

`StagedDir` is the primitive (stage → publish → commit, or rollback); `write_tree` fills a folder with
every format plus `manifest.json` (hashes of every other file), `build.json` and the dataset card;
`export_format` writes one format into a user folder (CLI `clkt snapshot export`).
"""

from __future__ import annotations

import errno
import re
import shutil
import time
import uuid
from pathlib import Path

from clkt.errors import DiskFullError, SnapshotError, UserError
from clkt.snapshots.card import render_card
from clkt.snapshots.content import SnapshotContent, canonical_json
from clkt.snapshots.control import write_control
from clkt.snapshots.formats import FORMATS, write_hf, write_lm_eval, write_native, write_reference, write_text
from clkt.snapshots.layout import BUILD_FILE, CARD_FILE, MANIFEST_FILE, BuildInfo, SnapshotManifest, sha256_file
from clkt.snapshots.locality import LocalitySplit, write_locality
from clkt.snapshots.open import write_open

__all__ = ["StagedDir", "export_format", "snapshot_dir", "write_tree"]


def snapshot_dir(out_dir: Path, spec: str, period: str) -> Path:
    return Path(out_dir) / spec / period


class StagedDir:
    """A folder written under a temporary name and renamed into `final` atomically (same filesystem).

    `publish()` moves an existing `final` aside and renames the staged folder in; `commit()` removes (or
    archives) what was moved aside; `rollback()` undoes everything. Use as a context manager: an exception
    inside the block rolls back.
    """

    def __init__(self, final: Path, *, archive_old_to: Path | None = None) -> None:
        self.final = Path(final)
        token = uuid.uuid4().hex[:8]
        self.tmp = self.final.parent / f".{self.final.name}.tmp-{token}"
        self._aside = self.final.parent / f".{self.final.name}.old-{token}"
        self._archive = archive_old_to
        self._published = False
        self._moved_aside = False

    # a staging folder untouched this long was left by a crashed attempt; a younger one may be a concurrent
    # builder's (two daemons on one store and one out_dir), which the sweep must not pull from under it
    STALE_AFTER_S = 3600.0

    @classmethod
    def sweep(cls, final: Path) -> list[Path]:
        """Remove temporary folders a crashed earlier attempt left next to `final` (untouched for `STALE_AFTER_S`)."""
        gone: list[Path] = []
        parent = Path(final).parent
        if parent.is_dir():
            for p in parent.glob(f".{Path(final).name}.tmp-*"):
                try:
                    if time.time() - p.stat().st_mtime < cls.STALE_AFTER_S:
                        continue
                except FileNotFoundError:
                    continue
                shutil.rmtree(p, ignore_errors=True)
                gone.append(p)
        return gone

    def __enter__(self) -> StagedDir:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir()
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            self.rollback()

    def publish(self) -> None:
        if self.final.exists():
            self.final.rename(self._aside)
            self._moved_aside = True
        self.tmp.rename(self.final)
        self._published = True

    def commit(self) -> None:
        if self._moved_aside:
            if self._archive is not None and not self._archive.exists():
                self._archive.parent.mkdir(parents=True, exist_ok=True)
                self._aside.rename(self._archive)
            else:
                shutil.rmtree(self._aside, ignore_errors=True)
            self._moved_aside = False

    def rollback(self) -> None:
        if self._published:
            shutil.rmtree(self.final, ignore_errors=True)
            self._published = False
        if self._moved_aside:
            self._aside.rename(self.final)
            self._moved_aside = False
        shutil.rmtree(self.tmp, ignore_errors=True)


def _translate_os_error(e: OSError, where: Path) -> Exception:
    """The error to show: it names `where` (the folder asked for), never a staging folder's temporary name."""
    staged = re.fullmatch(r"\.(.+)\.tmp-[0-9a-f]+", where.name)
    where = where.parent / staged.group(1) if staged else where
    cause = e.strerror or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"disk full while writing the snapshot under {where}: {cause}")
    return SnapshotError(f"cannot write the snapshot under {where}: {cause}")


def write_tree(
    content: SnapshotContent, manifest: SnapshotManifest, root: Path, *, built_at: str, clkt_version: str,
    locality: LocalitySplit | None = None,
) -> SnapshotManifest:
    """Write every format into `root` (an empty folder); return the manifest with the files' hashes (and, with
    `locality`, the locality split's files and its `LocalityInfo`: `clkt.snapshots.locality`)."""
    try:
        sources = sorted({d.source for d in content.docs})
        card = render_card(manifest, sources)
        files = write_native(content, root)
        files += write_control(content, root)  # the control split: its own folder, no other export holds it
        files += write_open(content, root)  # the open track (short-answer questions), real and control
        write_text(root / CARD_FILE, card)
        files.append(CARD_FILE)
        files += write_reference(content, root)
        files += write_hf(content, root, card_body=card)
        files += write_lm_eval(content, root)
        loc_files, loc_info = write_locality(root, locality.questions, known_by=locality.known_by,
                                             open_rows=locality.open) if locality else ([], None)
        files += loc_files
        # a tree written without its locality split (a re-export from the store) says it has none
        final = manifest.model_copy(update={"files": {rel: sha256_file(root / rel) for rel in sorted(files)},
                                            "locality": loc_info})
        write_text(root / MANIFEST_FILE, canonical_json(final.model_dump(mode="json")) + "\n")
        info = BuildInfo(snapshot_id=manifest.snapshot_id, built_at=built_at, clkt_version=clkt_version)
        write_text(root / BUILD_FILE, canonical_json(info.model_dump(mode="json")) + "\n")
    except OSError as e:
        raise _translate_os_error(e, root) from e
    return final


def export_format(
    content: SnapshotContent, manifest: SnapshotManifest, fmt: str, out: Path, *, built_at: str, clkt_version: str
) -> list[str]:
    """Write one export format into `out` (created; it must not exist or be empty), atomically."""
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; one of {', '.join(FORMATS)}")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty folder")
    if out.exists():
        out.rmdir()
    try:
        with StagedDir(out) as staged:
            if fmt == "native":
                write_tree(content, manifest, staged.tmp, built_at=built_at, clkt_version=clkt_version)
                files = sorted(p.relative_to(staged.tmp).as_posix() for p in staged.tmp.rglob("*") if p.is_file())
            elif fmt == "reference":
                files = write_reference(content, staged.tmp, prefix="")
            elif fmt == "hf":
                card = render_card(manifest, sorted({d.source for d in content.docs}))
                files = write_hf(content, staged.tmp, card_body=card, prefix="")
            else:
                files = write_lm_eval(content, staged.tmp, prefix="")
            staged.publish()
            staged.commit()
    except OSError as e:  # staging, writing or renaming: named by the folder asked for
        raise _translate_os_error(e, out) from e
    return files
