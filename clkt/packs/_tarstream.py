"""A `.tar.gz` read block by block, every limit enforced before anything is allocated for what it bounds.

CPython's `tarfile` reads a PAX or GNU long-name header's whole payload into memory before its caller sees a member
(a 204 KB archive whose one PAX header holds 200 MB cost 714 MB), so a pack's archive is read here instead: the gzip
stream is decompressed at most `CHUNK` bytes at a time (`zlib.decompressobj(...).decompress(data, max_length)`),
each 512-byte ustar header is parsed by hand (its checksum checked), and an extended header (PAX `x`/`g`, GNU `L`/`K`)
whose declared size passes `Limits.header_bytes` is refused before one byte of its payload is read. Counted on the
stream, whatever the headers claim: the compressed bytes, the decompressed bytes, their ratio, the entries, the
extended headers in a row before one entry (their nesting). Only regular files and folders are entries; a symbolic
or hard link, a device, a fifo, a sparse or any other kind of entry is refused, and so is a name that is absolute,
leaves the archive (`..`), is not UTF-8, holds a control character, is longer than `Limits.path_chars` or deeper
than `Limits.path_depth`, or is given twice.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from clkt.errors import UserError

__all__ = ["BLOCK", "CHUNK", "ArchiveRefused", "Entry", "Limits", "TarStream"]

BLOCK = 512
CHUNK = 1 << 16  # the most bytes decompressed (and held) at once
_RATIO_FROM = 1 << 20  # the ratio is checked once this many bytes were decompressed (tiny archives compress well)
_REGULAR = (b"0", b"\0", b"7")
_EXTENDED = {b"x": "PAX header", b"g": "global PAX header", b"L": "GNU long name", b"K": "GNU long link name"}
_REFUSED = {b"1": "link (hard)", b"2": "link (symbolic)", b"3": "special file (character device)",
            b"4": "special file (block device)", b"6": "special file (fifo)",
            b"S": "sparse file", b"V": "volume label", b"M": "multi-volume part", b"D": "GNU dump folder"}


class ArchiveRefused(UserError):
    """An archive past a limit or holding what a pack may not (one line: why)."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    compressed_bytes: int
    unpacked_bytes: int
    entries: int
    header_bytes: int  # an extended header's payload
    nested_headers: int  # extended headers in a row before one entry
    path_chars: int
    path_depth: int
    ratio: int  # decompressed / compressed bytes


@dataclass(frozen=True)
class Entry:
    path: PurePosixPath
    is_dir: bool
    size: int


class _Inflate:
    """The decompressed stream of a gzip file (members one after another), counted and bounded."""

    def __init__(self, fh: BinaryIO, limits: Limits) -> None:
        self.fh, self.limits = fh, limits
        self.compressed = 0
        self.unpacked = 0
        self._z = zlib.decompressobj(wbits=31)
        self._buf = b""
        self._pos = 0
        self._eof = False

    def _feed(self) -> bytes:
        """The next decompressed bytes (at most CHUNK), b"" at the end of the stream."""
        while True:
            if self._z.unconsumed_tail:
                data = self._z.unconsumed_tail
            elif self._z.eof:
                rest = self._z.unused_data
                if not rest:
                    rest = self._raw()
                if not rest:
                    return b""
                self._z = zlib.decompressobj(wbits=31)  # the next gzip member
                data = rest
            else:
                data = self._raw()
                if not data:
                    raise ArchiveRefused("the gzip stream ends early (truncated)")
            out = self._z.decompress(data, CHUNK)
            if out:
                return out

    def _raw(self) -> bytes:
        data = self.fh.read(CHUNK)
        self.compressed += len(data)
        if self.compressed > self.limits.compressed_bytes:
            raise ArchiveRefused(f"it passes the {self.limits.compressed_bytes:,}-byte limit on its compressed size")
        return data

    def read(self, n: int) -> bytes:
        """Exactly `n` bytes (n <= CHUNK), or b"" at a clean end; `ArchiveRefused` on a short read or a limit."""
        while len(self._buf) - self._pos < n and not self._eof:
            got = self._feed()
            if not got:
                self._eof = True
                break
            self.unpacked += len(got)
            self._check()
            self._buf = self._buf[self._pos :] + got  # the rest kept is under n bytes: no copy grows with the stream
            self._pos = 0
        left = len(self._buf) - self._pos
        if not left and self._eof:
            return b""
        if left < n:
            raise ArchiveRefused("the tar stream ends inside an entry (truncated)")
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def _check(self) -> None:
        lim = self.limits
        if self.unpacked > lim.unpacked_bytes:
            raise ArchiveRefused(f"its content passes the {lim.unpacked_bytes:,}-byte limit")
        if self.unpacked > _RATIO_FROM and self.unpacked > lim.ratio * max(self.compressed, 1):
            raise ArchiveRefused(f"it decompresses more than {lim.ratio}x (a compression bomb)")


def _octal(field: bytes, what: str) -> int:
    if field[:1] and field[0] & 0x80:  # GNU base-256: only sizes far past every limit need it
        raise ArchiveRefused(f"an entry's {what} is in base-256 (too large)")
    text = field.split(b"\0", 1)[0].strip(b" ")
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise ArchiveRefused(f"an entry's {what} is not an octal number ({text[:20]!r})") from None


def _checksum_ok(block: bytes) -> bool:
    want = _octal(block[148:156], "checksum")
    blanked = block[:148] + b" " * 8 + block[156:]
    return want in (sum(blanked), sum(b - 256 if b > 127 else b for b in blanked))


def _pax_path(payload: bytes) -> str | None:
    """The `path` record of a PAX header (`"%d path=%s\\n"` records), None when it has none."""
    path: str | None = None
    pos = 0
    while pos < len(payload):
        space = payload.find(b" ", pos)
        if space < 0:
            raise ArchiveRefused("a PAX header is not made of records")
        try:
            length = int(payload[pos:space])
        except ValueError:
            raise ArchiveRefused("a PAX header's record length is not a number") from None
        record = payload[space + 1 : pos + length]
        if length <= 0 or pos + length > len(payload) or not record.endswith(b"\n") or b"=" not in record:
            raise ArchiveRefused("a PAX header's record is malformed")
        key, _, value = record[:-1].partition(b"=")
        if key == b"path":
            path = _utf8(value)
        elif key == b"size":
            raise ArchiveRefused("a PAX header overrides an entry's size (not written by clkt)")
        pos += length
    return path


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveRefused(f"an entry's name is not UTF-8 ({raw[:40]!r})") from None


class TarStream:
    """`entries()` yields each file or folder of the archive; a file's bytes must be read (`chunks`) before the next."""

    def __init__(self, fh: BinaryIO, limits: Limits) -> None:
        head = fh.read(4)
        if head[:4] == b"PK\x03\x04":
            raise ArchiveRefused("not a readable .tar.gz (it is a zip archive)")
        if head[:2] != b"\x1f\x8b":
            raise ArchiveRefused("not a readable .tar.gz (it is not gzip-compressed)")
        fh.seek(0)
        self.limits = limits
        self._z = _Inflate(fh, limits)
        self._seen: set[PurePosixPath] = set()
        self._left = 0  # bytes of the current file not read yet (its padding included)
        self._data = 0

    def _header(self) -> tuple[bytes, bytes] | None:
        """The next header block and its type, None at the archive's end (a zero block or the stream's end)."""
        block = self._z.read(BLOCK)
        if not block or block == bytes(BLOCK):
            return None
        if not _checksum_ok(block):
            raise ArchiveRefused("an entry's header checksum is wrong (not a tar archive, or a damaged one)")
        return block, block[156:157]

    def _extended(self, kind: bytes, size: int) -> bytes:
        lim = self.limits.header_bytes
        if size > lim:
            raise ArchiveRefused(f"a {_EXTENDED[kind]} of {size:,} bytes passes the {lim:,}-byte header limit")
        payload = b"".join(self._z.read(BLOCK) for _ in range(-(-size // BLOCK)))
        return payload[:size]

    def entries(self) -> Iterator[Entry]:
        count = 0
        while True:
            self._skip()
            name: str | None = None
            nested = 0
            while True:
                got = self._header()
                if got is None:
                    return
                count += 1
                if count > self.limits.entries:
                    raise ArchiveRefused(f"more than {self.limits.entries} entries")
                block, kind = got
                size = _octal(block[124:136], "size")
                if kind not in _EXTENDED:
                    break
                nested += 1
                if nested > self.limits.nested_headers:
                    raise ArchiveRefused(f"more than {self.limits.nested_headers} extended headers in a row")
                payload = self._extended(kind, size)
                if kind == b"x":
                    name = _pax_path(payload) or name
                elif kind == b"L":
                    name = _utf8(payload.split(b"\0", 1)[0])
                elif kind == b"g":
                    _pax_path(payload)
            yield self._entry(block, kind, size, name)

    def _entry(self, block: bytes, kind: bytes, size: int, name: str | None) -> Entry:
        if name is None:
            raw = block[:100].split(b"\0", 1)[0]
            if block[257:262] == b"ustar":
                prefix = block[345:500].split(b"\0", 1)[0]
                raw = prefix + b"/" + raw if prefix else raw
            name = _utf8(raw)
        if kind in _REFUSED:
            raise ArchiveRefused(f"{name[:200]!r} is a {_REFUSED[kind]} (only regular files are read)")
        if kind not in _REGULAR and kind != b"5":
            raise ArchiveRefused(f"{name[:200]!r} is an entry of unknown type {kind!r} (only regular files are read)")
        path = self._path(name)
        is_dir = kind == b"5"
        if size > self.limits.unpacked_bytes:
            raise ArchiveRefused(f"{name[:200]!r} declares {size:,} bytes, past the {self.limits.unpacked_bytes:,}-byte limit")
        self._left = 0 if is_dir else -(-size // BLOCK) * BLOCK
        self._data = 0 if is_dir else size
        return Entry(path=path, is_dir=is_dir, size=0 if is_dir else size)

    def _path(self, name: str) -> PurePosixPath:
        lim = self.limits
        shown = repr(name[:200])
        if len(name) > lim.path_chars:
            raise ArchiveRefused(f"an entry's name of {len(name):,} characters passes the {lim.path_chars}-character limit")
        if any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise ArchiveRefused(f"{shown} holds a control character")
        if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
            raise ArchiveRefused(f"{shown} is an absolute path")
        parts = [p for p in PurePosixPath(name).parts if p != "."]
        if ".." in parts:
            raise ArchiveRefused(f"{shown} leaves the archive ('..')")
        if len(parts) > lim.path_depth:
            raise ArchiveRefused(f"{shown} is {len(parts)} folders deep, past the limit of {lim.path_depth}")
        path = PurePosixPath(*parts) if parts else PurePosixPath(".")
        if path in self._seen and parts:
            raise ArchiveRefused(f"{shown} is in the archive twice")
        self._seen.add(path)
        return path

    def chunks(self) -> Iterator[bytes]:
        """The current file's bytes, at most CHUNK at a time."""
        while self._left:
            n = min(self._left, CHUNK)
            data = self._z.read(n)
            self._left -= n
            keep = min(n, self._data)
            self._data -= keep
            if keep:
                yield data[:keep]

    def _skip(self) -> None:
        for _ in self.chunks():
            pass
