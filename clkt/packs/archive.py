"""A pack as one `.tar.gz` archive: written deterministically, read back by a safe extraction.

Extraction reads the archive with `clkt.packs._tarstream` (not `tarfile`, which holds a PAX header's whole payload
in memory): only regular files and folders, each by a relative name inside the archive (no absolute name, no `..`,
no link, device or fifo, no name twice), every limit (`SafeExtract.MAX_*`: compressed and decompressed bytes, entries,
header size, nested headers, name length and depth, compression ratio) counted on the stream before anything is
allocated for it: a hostile archive is refused with one line (`UserError`) and leaves nothing behind. The files may
sit at the archive's top or in one folder there (`tar czf pack.tar.gz pack/`).
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import Path
from typing import ClassVar

from clkt.errors import UserError
from clkt.packs._tarstream import ArchiveRefused, Limits, TarStream

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
    holds the pack's files. The limits are class constants (tests and the intake change them)."""

    MAX_COMPRESSED_BYTES: ClassVar[int] = 1 << 30  # the archive itself (the endpoint's own limit is lower)
    MAX_UNPACKED_BYTES: ClassVar[int] = 1 << 30  # 1 GiB: the documented limit of a pack's decompressed size
    MAX_MEMBERS: ClassVar[int] = 64
    MAX_HEADER_BYTES: ClassVar[int] = 64 << 10  # one PAX / GNU long-name header's payload
    MAX_NESTED_HEADERS: ClassVar[int] = 4  # extended headers in a row before one entry
    MAX_PATH_CHARS: ClassVar[int] = 255
    MAX_PATH_DEPTH: ClassVar[int] = 4
    MAX_RATIO: ClassVar[int] = 200  # decompressed / compressed bytes, past the first MiB

    def __init__(self, archive: Path, *, limits: Limits | None = None) -> None:
        self.archive = archive
        self._limits = limits

    @classmethod
    def limits(cls) -> Limits:
        return Limits(compressed_bytes=cls.MAX_COMPRESSED_BYTES, unpacked_bytes=cls.MAX_UNPACKED_BYTES,
                      entries=cls.MAX_MEMBERS, header_bytes=cls.MAX_HEADER_BYTES, nested_headers=cls.MAX_NESTED_HEADERS,
                      path_chars=cls.MAX_PATH_CHARS, path_depth=cls.MAX_PATH_DEPTH, ratio=cls.MAX_RATIO)

    def _refuse(self, why: str) -> UserError:
        return UserError(f"pack archive {self.archive}: {why}; nothing was extracted")

    def extract(self, dest: Path) -> Path:
        try:
            with self.archive.open("rb") as fh:
                self._extract(TarStream(fh, self._limits or self.limits()), dest)
        except ArchiveRefused as e:
            raise self._refuse(str(e)) from None
        except (OSError, zlib.error) as e:
            raise self._refuse(f"not a readable .tar.gz ({type(e).__name__}: {e})") from e
        return self._root(dest)

    @staticmethod
    def _extract(tar: TarStream, dest: Path) -> None:
        for entry in tar.entries():
            target = dest.joinpath(*entry.path.parts)
            if entry.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("xb") as out:
                for chunk in tar.chunks():
                    out.write(chunk)

    def _root(self, dest: Path) -> Path:
        """`dest`, or the one folder at its top when the files sit in it."""
        top = list(dest.iterdir())
        if len(top) == 1 and top[0].is_dir():
            return top[0]
        return dest
