"""Hostile `.tar.gz` archives written by hand, block by block (`tarfile` would refuse to write most of them): the
tests of the bounded reader (`clkt.packs._tarstream`) and the intake fuzzer (`bench/intake_fuzz.py`) build theirs
here."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from collections.abc import Iterable, Iterator

__all__ = ["gz", "header", "member", "pax", "pax_bomb", "tar_of"]


def header(name: str | bytes, size: int, kind: bytes = b"0", *, linkname: str = "") -> bytes:
    """One ustar header block (its checksum right) of any type, whatever its name."""
    raw = name.encode() if isinstance(name, str) else name
    block = bytearray(512)
    block[0 : min(len(raw), 100)] = raw[:100]
    block[100:108] = b"0000644\0"
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = f"{size:011o}\0".encode() if size < 8**11 else b"\x80" + size.to_bytes(11, "big")
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[157 : 157 + len(linkname)] = linkname.encode()[:100]
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def member(name: str | bytes, data: bytes = b"", kind: bytes = b"0", *, linkname: str = "") -> bytes:
    return header(name, len(data), kind, linkname=linkname) + _pad(data)


def pax(records: dict[str, str], kind: bytes = b"x") -> bytes:
    body = b""
    for k, v in records.items():
        rec = f" {k}={v}\n".encode()
        n = len(rec) + 1
        while len(str(n).encode()) + len(rec) != n:
            n += 1
        body += str(n).encode() + rec
    return member("././@PaxHeader", body, kind)


def tar_of(blocks: Iterable[bytes]) -> bytes:
    return b"".join(blocks) + bytes(1024)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _bomb_stream(size: int) -> Iterator[bytes]:
    text = f"{size} comment=".encode()
    yield header("././@PaxHeader", size, b"x")
    left = size - len(text) - 1
    yield text
    chunk = b"a" * (1 << 20)
    while left > 0:
        yield chunk[: min(left, len(chunk))]
        left -= len(chunk)
    yield b"\n" + bytes(-size % 512)
    yield member("manifest.json", b"{}") + bytes(1024)


def pax_bomb(size: int = 200 << 20) -> bytes:
    """A small `.tar.gz` whose one PAX header declares and holds `size` bytes (one `comment` record): `tarfile`
    reads the whole of it into memory before its first member."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = io.BytesIO()
    for part in _bomb_stream(size):
        out.write(z.compress(part))
    out.write(z.flush())
    return out.getvalue()


def honest_tar(files: dict[str, bytes]) -> bytes:
    """`files` as a plain (uncompressed) PAX tar, as `clkt.packs.archive.archive_bytes` writes before gzip."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            t.addfile(info, io.BytesIO(files[name]))
    return raw.getvalue()
