"""A pack as one `.tar.gz` archive: written deterministically, read back by a safe extraction.

Extraction takes only regular files, each by a relative name inside the archive (no absolute name, no `..`, no
symbolic or hard link, no device or fifo), at most `MAX_MEMBERS` of them, and stops as soon as the bytes written
pass `MAX_UNPACKED_BYTES` (counted while writing, whatever the headers claim): a hostile archive is refused with
one line (`UserError`) and leaves nothing behind. The files may sit at the archive's top or in one folder there
(`tar czf pack.tar.gz pack/`).
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import ClassVar

from clkt.errors import UserError

__all__ = ["ARCHIVE_SUFFIXES", "SafeExtract", "archive_bytes", "is_archive", "write_archive"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


def is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """`files` (name -> bytes) as a gzip'd tar, byte for byte the same for the same files (sorted names, no times,
    owners or modes of this machine)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def write_archive(files: dict[str, bytes], out: Path) -> None:
    """`files` as the archive `archive_bytes` makes, written at `out` (through a temporary name beside it)."""
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(archive_bytes(files))
    tmp.replace(out)


class SafeExtract:
    """Extracts a pack archive into an empty folder (see the module docstring); `extract` returns the folder that
    holds the pack's files."""

    MAX_UNPACKED_BYTES: ClassVar[int] = 1 << 30  # 1 GiB: the documented limit of a pack's decompressed size
    MAX_MEMBERS: ClassVar[int] = 64

    def __init__(self, archive: Path) -> None:
        self.archive = archive

    def _refuse(self, why: str) -> UserError:
        return UserError(f"pack archive {self.archive}: {why}; nothing was extracted")

    def _name(self, member: tarfile.TarInfo) -> PurePosixPath:
        name = member.name
        if not (member.isfile() or member.isdir()):
            kind = "link" if member.issym() or member.islnk() else "special file"
            raise self._refuse(f"{name!r} is a {kind} (only regular files are read)")
        p = PurePosixPath(name)
        if name.startswith("/") or "\\" in name or p.is_absolute() or (len(name) > 1 and name[1] == ":"):
            raise self._refuse(f"{name!r} is an absolute path")
        if any(part == ".." for part in p.parts):
            raise self._refuse(f"{name!r} leaves the archive ('..')")
        return PurePosixPath(*[x for x in p.parts if x != "."])

    def extract(self, dest: Path) -> Path:
        written = 0
        members = 0
        try:
            with tarfile.open(self.archive, mode="r:*") as tar:
                for member in tar:
                    members += 1
                    if members > self.MAX_MEMBERS:
                        raise self._refuse(f"more than {self.MAX_MEMBERS} entries")
                    rel = self._name(member)
                    if member.isdir() or not rel.parts:
                        continue
                    target = dest.joinpath(*rel.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tar.extractfile(member)
                    if src is None:
                        raise self._refuse(f"{member.name!r} cannot be read")
                    with target.open("wb") as out:
                        while chunk := src.read(1 << 20):
                            written += len(chunk)
                            if written > self.MAX_UNPACKED_BYTES:
                                raise self._refuse(f"its content passes the {self.MAX_UNPACKED_BYTES:,}-byte limit")
                            out.write(chunk)
        except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as e:
            raise self._refuse(f"not a readable .tar.gz ({type(e).__name__}: {e})") from e
        return self._root(dest)

    def _root(self, dest: Path) -> Path:
        """`dest`, or the one folder at its top when the files sit in it."""
        top = list(dest.iterdir())
        if len(top) == 1 and top[0].is_dir():
            return top[0]
        return dest
