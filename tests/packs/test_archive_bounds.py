"""The bounded archive reader (`clkt.packs._tarstream` behind `clkt.packs.archive.SafeExtract`) and the verifier's
child process (`clkt.packs.sandbox`): every limit holds while reading, before anything is allocated for it, and a
hostile archive is one refusal, whatever it holds.

The PAX test is the issue's: a ~200 KB `.tar.gz` whose one PAX header holds 200 MB. `tarfile` (what
`SafeExtract` used before) reads that payload whole into memory (peak RSS past 400 MB); here the header is refused
by its declared size, before a byte of its payload is read, and the reading process stays under 120 MB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.packs.archive import SafeExtract, archive_bytes
from clkt.packs.sandbox import Sandbox, read_pack_isolated
from tests.packs._hostile import gz, header, honest_tar, member, pax, pax_bomb, tar_of
from tests.packs._packs import make_pack

_PEAK = """
import sys, tempfile
from pathlib import Path
{body}
print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024)  # this program's peak RSS
"""
_OURS = """
from clkt.packs.archive import SafeExtract
from clkt.errors import UserError
try:
    SafeExtract(Path(sys.argv[1])).extract(Path(tempfile.mkdtemp()))
except UserError as e:
    print(e, file=sys.stderr)
"""
_TARFILE = """
import tarfile
with tarfile.open(sys.argv[1], "r:gz") as t:
    for m in t:
        pass
"""


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "pax.tar.gz"
    path.write_bytes(pax_bomb(200 << 20))
    return path


def _peak(body: str, archive: Path) -> tuple[int, str]:
    got = subprocess.run([sys.executable, "-c", _PEAK.format(body=body), str(archive)], capture_output=True, text=True,
                         check=True, timeout=120)
    return int(got.stdout.split()[-1]), got.stderr


@pytest.mark.slow
def test_a_200_mb_pax_header_is_refused_before_it_is_read(bomb: Path) -> None:
    assert bomb.stat().st_size < 1 << 20
    before, _ = _peak(_TARFILE, bomb)  # what the old reader did: the header's payload whole in memory
    assert before > 400 << 20
    after, err = _peak(_OURS, bomb)
    assert "a PAX header of 209,715,200 bytes passes the 65,536-byte header limit" in err
    assert after < 120 << 20, f"peak RSS {after:,} bytes"


def test_the_pax_bomb_costs_the_intake_one_quick_refusal(bomb: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(UserError, match="PAX header of 209,715,200 bytes passes"):
        read_pack_isolated(bomb, shown="the upload")
    assert time.monotonic() - t0 < 5


def _refused(tmp_path: Path, data: bytes, line: str) -> None:
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "x.tar.gz"
    path.write_bytes(data)
    dest = path.parent / "out"
    dest.mkdir()
    with pytest.raises(UserError, match=line) as e:
        SafeExtract(path).extract(dest)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("kind", "line"), [
    (b"1", "is a link \\(hard\\)"), (b"2", "is a link \\(symbolic\\)"), (b"3", "special file \\(character device\\)"),
    (b"4", "special file \\(block device\\)"), (b"6", "special file \\(fifo\\)"), (b"S", "sparse file"),
    (b"V", "volume label"), (b"Z", "unknown type"),
])
def test_every_member_type_but_files_and_folders_is_refused(tmp_path: Path, kind: bytes, line: str) -> None:
    _refused(tmp_path, gz(tar_of([member("a.json", b"{}"), member("odd", b"", kind, linkname="a.json")])), line)


@pytest.mark.parametrize(("blocks", "line"), [
    ([member("a", b"1"), member("a", b"2")], "'a' is in the archive twice"),
    ([member("a", b"1"), member("./a", b"2")], "'./a' is in the archive twice"),
    ([member("/etc/passwd", b"x")], "is an absolute path"),
    ([member("a/../../b", b"x")], "leaves the archive"),
    ([member("a\\b", b"x")], "is an absolute path"),
    ([member("a\x01b", b"x")], "control character"),
    ([member(b"\xff\xfe.json", b"x")], "is not UTF-8"),
    ([member("a/b/c/d/e/f", b"x")], "6 folders deep"),
    ([pax({"path": "x" * 300}), member("a", b"x")], "300 characters passes the 255-character limit"),
    ([pax({"comment": "x"})] * 5 + [member("a", b"x")], "more than 4 extended headers in a row"),
    ([member("././@LongLink", b"n" * 70_000, b"L"), member("a", b"x")], "GNU long name of 70,000 bytes passes"),
    ([pax({"size": "10"}), member("a", b"x")], "overrides an entry's size"),
    ([header("a", 5_000_000_000)], "declares 5,000,000,000 bytes"),
    ([header("a", 8**12)], "base-256"),
    ([member(f"f{i}", b"") for i in range(70)], "more than 64 entries"),
])
def test_hostile_headers_are_refused_while_reading(tmp_path: Path, blocks: list[bytes], line: str) -> None:
    _refused(tmp_path, gz(tar_of(blocks)), line)


def test_truncations_zips_bombs_and_garbage_are_one_line(tmp_path: Path) -> None:
    good = archive_bytes({"manifest.json": b"{}" * 3000, "b.json": b"[]"})
    _refused(tmp_path, good[: len(good) // 2], "truncated")
    _refused(tmp_path, gz(honest_tar({"a": b"x" * 5000})[:1500]), "truncated")
    _refused(tmp_path, b"PK\x03\x04" + bytes(100), "it is a zip archive")
    _refused(tmp_path, b"hello", "not gzip-compressed")
    _refused(tmp_path, gz(bytes(300) + b"x" * 212), "checksum is wrong")
    _refused(tmp_path, gz(tar_of([member("z", bytes(40 << 20))])), "decompresses more than 200x")


def test_the_compressed_limit_holds_on_the_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SafeExtract, "MAX_COMPRESSED_BYTES", 1 << 16)
    _refused(tmp_path, gz(tar_of([member("r", os.urandom(200_000))])), "limit on its compressed size")


def test_an_honest_pack_reads_in_the_child(tmp_path: Path) -> None:
    sha = make_pack(tmp_path / "pack.tar.gz")
    pack = read_pack_isolated(tmp_path / "pack.tar.gz", shown="the upload")
    assert pack.sha256 == sha and pack.predictions and str(pack.source) == "the upload"


def test_the_child_gets_no_secret_of_the_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    from clkt.packs.sandbox import _child_env

    monkeypatch.setenv("CLKT_INTAKE_TOKEN", "secret-value")
    assert set(_child_env()) == {"PYTHONPATH", "PYTHONNOUSERSITE", "LC_ALL"}


def test_a_child_past_its_memory_limit_is_one_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_pack(tmp_path / "pack.tar.gz", metrics={"note": os.urandom(12 << 20).hex()})  # honest, large to read
    monkeypatch.setattr(Sandbox, "MEMORY_BYTES", 64 << 20)
    with pytest.raises(UserError, match="memory limit") as e:
        read_pack_isolated(tmp_path / "pack.tar.gz", shown="the upload")
    assert "\n" not in str(e.value) and json.dumps(str(e.value))
