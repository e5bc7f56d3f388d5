"""The hostile packs of `bench/intake_fuzz.py`: each mutated from one honest pack (the tiny snapshot's,
`tests.packs._packs`), with what the intake must do with it.

`expect` is "refuse" (anything but HTTP 200) or "claims" (honest letters with lying metrics: it may be taken in, but
only with `claims_match` false, its metrics recomputed). Any mutation may also come out as the honest pack itself
(a flip in a gzip header's time or a tar block's padding, a regular file of type 7, data after the archive's end):
taken in with its sha256 and `stored` false, nothing changed, that is no accept of a lie (`bench/intake_fuzz.py`).
Families: truncations, bit flips (in the gzip stream
and in the tar stream under it), huge, declared-only and nested extended headers, every tar member type, unicode,
invalid and overlong names, deep paths, duplicate members, manifest lies (newer format, another snapshot, another
content hash, a file's hash, missing and extra files, no cutoff, a cutoff too late), letter-file lies (questions
answered twice or not at all, foreign questions, languages, scorers), metric lies, and other containers (zip,
plain tar, bzip2, xz, a gzip bomb, empty).
"""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import lzma
import random
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from clkt.packs.archive import archive_bytes
from clkt.packs.format import FORMAT_VERSION, MANIFEST_FILE, METRICS_FILE, PREDICTIONS_FILE
from clkt.packs.metrics import compute_metrics
from clkt.packs.pack import pack_bytes
from tests.inject._fixtures import SNAPSHOT_ID
from tests.packs._hostile import gz, header, honest_tar, member, pax, pax_bomb, tar_of
from tests.packs._packs import LANGS, manifest, rows

__all__ = ["Case", "cases", "honest_files"]

TYPES = [b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"S", b"V", b"M", b"N", b"D", b"g", b"x", b"L", b"K", b"A", b"\xff"]
NAMES = ["\u202emanifest.json", "ma\u0301nifest.json", "\U0001f4a5.json", "con", "a:b", "..", ".", "./../x", "//x",
         "x\x00y", "\t", "é" * 200, "../" * 10 + "etc/passwd", "C:\\x", "pack/pack/pack/pack/pack/x", "\ud800"]


@dataclass(frozen=True)
class Case:
    family: str
    body: bytes
    expect: str = "refuse"


def honest_files(**changes: Any) -> dict[str, bytes]:
    preds = rows()
    metrics = compute_metrics(preds, LANGS, format_version=FORMAT_VERSION, snapshot_id=SNAPSHOT_ID).model_dump(mode="json")
    return pack_bytes(manifest(**changes), preds, metrics)


def _rehash(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files with the manifest's hashes and sizes made to match them again (a lie that passes the hash check)."""
    m = json.loads(files[MANIFEST_FILE])
    m["files"] = {n: {"sha256": hashlib.sha256(b).hexdigest(), "bytes": len(b)} for n, b in files.items() if n != MANIFEST_FILE}
    return {**files, MANIFEST_FILE: json.dumps(m).encode()}


def _manifest_lies(rng: random.Random) -> Iterator[Case]:
    changes: list[dict[str, Any]] = [
        {"snapshot": {"id": "foreign-2025-06-000000000000"}}, {"snapshot": {"content_sha256": "f" * 64}},
        {"snapshot": {"id": f"tiny-2025-0{rng.randint(1, 5)}-000000000000"}}, {"model": {"cutoff": None}},
        {"model": {"cutoff": "2025-05-01"}}, {"format_version": FORMAT_VERSION + 1}, {"train_languages": ["ja"]},
        {"scorers": ["nope"]},
    ]
    for c in changes:
        yield Case("manifest-lie", gz(honest_tar(_rehash(honest_files(**c)))))
    files = honest_files()
    m = json.loads(files[MANIFEST_FILE])
    m["files"][PREDICTIONS_FILE]["sha256"] = "0" * 64
    yield Case("manifest-lie", archive_bytes({**files, MANIFEST_FILE: json.dumps(m).encode()}))
    yield Case("manifest-lie", archive_bytes({k: v for k, v in files.items() if k != METRICS_FILE}))
    yield Case("manifest-lie", archive_bytes({**files, "extra.txt": b"x"}))
    yield Case("manifest-lie", archive_bytes({**files, MANIFEST_FILE: b"[]"}))
    yield Case("manifest-lie", archive_bytes({**files, MANIFEST_FILE: files[MANIFEST_FILE][:-20]}))


def _letter_lies(rng: random.Random) -> Iterator[Case]:
    files = honest_files()
    lines = files[PREDICTIONS_FILE].splitlines(keepends=True)
    edits: list[Callable[[list[bytes]], list[bytes]]] = [
        lambda ls: [*ls, ls[0]], lambda ls: ls[1:], lambda ls: [ls[0].replace(b'"qid":', b'"qid":9'), *ls[1:]],
        lambda ls: [ls[0].replace(b'"lang":"en"', b'"lang":"xx"'), *ls[1:]],
        lambda ls: [ls[0].replace(b'"scorer":"option-loglik"', b'"scorer":"other"'), *ls[1:]],
        lambda ls: [b"{not json\n", *ls], lambda ls: [b'{"qid": 1}\n', *ls], lambda ls: [b"\xff\xfe\n", *ls],
        lambda ls: [b"[" * 100000 + b"\n", *ls],
    ]
    for edit in edits:
        yield Case("letter-lie", gz(honest_tar(_rehash({**files, PREDICTIONS_FILE: b"".join(edit(list(lines)))}))))
    for _ in range(3):
        metrics = json.loads(files[METRICS_FILE])
        metrics["scorers"]["option-loglik"]["means"]["overall"] = round(rng.random(), 3)
        yield Case("metric-lie", gz(honest_tar(_rehash({**files, METRICS_FILE: json.dumps(metrics).encode()}))), "claims")
    yield Case("metric-lie", gz(honest_tar(_rehash({**files, METRICS_FILE: b"[1, 2]"}))))


def _containers(files: dict[str, bytes]) -> Iterator[Case]:
    raw = honest_tar(files)
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    for body in (z.getvalue(), raw, bz2.compress(raw), lzma.compress(raw), b"", b"\x1f\x8b", gz(b""), gz(bytes(10_000)),
                 gz(tar_of([member("z", bytes(40 << 20))])), gz(raw) + b"trailing junk" * 10):
        yield Case("container", body)


def _headers(rng: random.Random, bomb: bytes) -> Iterator[Case]:
    ok = [member(n, d) for n, d in sorted(honest_files().items())]
    yield Case("huge-header", bomb)
    for size in (1 << 17, 1 << 24, 1 << 33, 8**11 - 1):
        yield Case("huge-header", gz(header("././@PaxHeader", size, b"x") + b"9 path=x\n"))
        yield Case("huge-header", gz(header("././@LongLink", size, b"L") + b"x" * 512))
    for depth in range(2, 12):
        yield Case("nested-header", gz(tar_of([pax({"comment": "x" * rng.randint(1, 500)})] * depth + ok)))
        yield Case("nested-header", gz(tar_of([member("././@LongLink", b"a" * 50, b"L")] * depth + ok)))
    yield Case("nested-header", gz(tar_of([pax({"path": "x"}, b"g")] * 8 + ok)))


def _members(rng: random.Random) -> Iterator[Case]:
    files = honest_files()
    ok = [member(n, d) for n, d in sorted(files.items())]
    for kind in TYPES:
        if kind in (b"5", b"g"):
            continue  # a folder, a global header: harmless beside the files (the pack then fails as what it is)
        at = rng.randrange(len(ok) + 1)
        yield Case("member-type", gz(tar_of([*ok[:at], member("odd", b"data", kind, linkname=MANIFEST_FILE), *ok[at:]])))
        yield Case("member-type", gz(tar_of([member(n, d, kind, linkname="/etc/passwd") for n, d in sorted(files.items())])))
    for name in NAMES:
        yield Case("name", gz(tar_of([*ok, member(name.encode("utf-8", "surrogatepass"), b"x")])))
        if name.encode("utf-8", "replace") == name.encode("utf-8", "surrogatepass"):
            yield Case("name", gz(tar_of([*ok, pax({"path": name}), member("x", b"1")])))
    for n in (101, 256, 1000, 5000):
        yield Case("long-name", gz(tar_of([*ok, pax({"path": "n" * n}), member("x", b"1")])))
        yield Case("long-name", gz(tar_of([*ok, member("././@LongLink", b"n" * n, b"L"), member("x", b"1")])))
    yield Case("deep", gz(tar_of([*ok, member("/".join(["d"] * 30) + "/x", b"1")])))
    for name in sorted(files):
        yield Case("duplicate", gz(tar_of([*ok, member(name, b"{}")])))
        yield Case("duplicate", gz(tar_of([*ok, member("./" + name, files[name])])))
        yield Case("duplicate", gz(tar_of([*ok, member("pack/../" + name, files[name])])))
    yield Case("many-members", gz(tar_of(ok + [member(f"f{i}", b"") for i in range(100)])))


def _bitflips(rng: random.Random, honest: bytes, n: int) -> Iterator[Case]:
    raw = bytearray(gz_inner(honest))
    for i in range(n):
        inner = i % 2 == 1
        data = bytearray(raw if inner else honest)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(min(len(data), 3072) if inner and rng.random() < 0.7 else len(data))
            data[pos] ^= 1 << rng.randrange(8)
        yield Case("bitflip-tar" if inner else "bitflip-gzip", gz(bytes(data)) if inner else bytes(data))


def gz_inner(body: bytes) -> bytes:
    import gzip

    return gzip.decompress(body)


def cases(n: int, *, seed: int = 0, bomb_bytes: int = 200 << 20) -> list[Case]:
    """At least `n` hostile packs (the fixed families, then truncations and bit flips to make up `n`)."""
    rng = random.Random(seed)
    honest = archive_bytes(honest_files())
    out: list[Case] = [*_manifest_lies(rng), *_letter_lies(rng), *_containers(honest_files()),
                       *_headers(rng, pax_bomb(bomb_bytes)), *_members(rng)]
    left = max(0, n - len(out))
    cuts = left // 3
    out += [Case("truncation", honest[: rng.randrange(1, len(honest))]) for _ in range(cuts)]
    out += list(_bitflips(rng, honest, left - cuts))
    rng.shuffle(out)
    return out
