"""`clkt submit` through the real CLI on a real SQLite store: a good pack is stored once (folder or archive, one
identity), metrics that do not match the predictions are recomputed and said so, and a catalogue of bad and hostile
packs is each refused with its one line, a non-zero exit and the store as it was."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from clkt.packs.archive import SafeExtract
from clkt.packs.format import FORMAT_VERSION, MANIFEST_FILE, METRICS_FILE, PREDICTIONS_FILE
from tests.cli._in_process import clkt
from tests.packs._packs import TEST_QIDS, VAL_QID, assert_refused, make_pack, make_store, rows, store_dump, submitted

pytestmark = pytest.mark.usefixtures("wide_console")


async def test_a_good_pack_is_stored_once_whatever_its_form(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    sha = make_pack(tmp_path / "pack")
    make_pack(tmp_path / "pack.tar.gz")
    first = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert first.returncode == 0, first.stderr
    assert f"submitted pack {sha[:12]}: tiny on " in first.stdout
    assert ("option-loglik: overall 100.0 %, transfer not interpretable (mean over 1 language pairs; did not learn: en (its "
            "pairs left out of Transfer))") in first.stdout
    assert first.stderr == ""
    (row,) = submitted(tmp_path)
    assert row[0] == sha and row[1] == "tiny" and row[2] == 1
    before = store_dump(tmp_path)
    for again in ("pack", "pack.tar.gz"):  # the same pack, as a folder or an archive: nothing changes
        res = clkt("submit", str(tmp_path / again), "--config", str(cfg))
        assert res.returncode == 0, res.stderr
        assert "was submitted before: nothing changed" in res.stdout
    assert store_dump(tmp_path) == before


async def test_metrics_that_do_not_match_are_recomputed_and_said_so(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    preds = rows()
    lie = [r.model_copy(update={"correct": True}) for r in preds]  # every base answer claimed right
    sha = make_pack(tmp_path / "pack", preds=lie)  # its metrics.json computed from the lie
    res = clkt("submit", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "does not match its predictions (scorers.option-loglik.accuracy[0].accuracy: 1.0 != 0.5)" in res.stderr
    assert "the metrics recomputed here are stored, the pack's claims ignored" in res.stderr
    assert "2 answers' `correct` disagreed with their letter" in res.stderr
    (row,) = submitted(tmp_path)
    stored = json.loads(row[3])
    assert row[0] == sha and row[2] == 0
    assert stored["scorers"]["option-loglik"]["learn"]["en"]["base_accuracy"] == 0.5  # the letters', not the claim's


def _rewrite_manifest(pack: Path, change: Callable[[dict], None]) -> None:
    data = json.loads((pack / MANIFEST_FILE).read_text())
    change(data)
    (pack / MANIFEST_FILE).write_text(json.dumps(data))


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name: str, data: bytes = b"x", **kw: object) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info, (data if info.isfile() else None)


def _good_tar_with(tmp_path: Path, extra: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    make_pack(tmp_path / "good")
    members = [_member(p.name, p.read_bytes()) for p in sorted((tmp_path / "good").iterdir())]
    return _tar(tmp_path / "bad.tar.gz", [*members, extra])


def _link(tmp_path: Path, kind: bytes) -> Path:
    info, _ = _member("metrics.json", b"")
    info.type, info.linkname, info.size = kind, "/etc/passwd", 0
    return _good_tar_with(tmp_path, (info, None))


def _edit(tmp_path: Path, name: str, edit: Callable[[bytes], bytes]) -> Path:
    make_pack(tmp_path / "pack")
    f = tmp_path / "pack" / name
    f.write_bytes(edit(f.read_bytes()))
    return tmp_path / "pack"


def _swap_letter(b: bytes) -> bytes:
    i = b.index(b'"predicted":"') + len(b'"predicted":"')
    return b[:i] + (b"D" if b[i : i + 1] != b"D" else b"A") + b[i + 1 :]


def _too_big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(SafeExtract, "MAX_UNPACKED_BYTES", 1000)
    make_pack(tmp_path / "pack.tar.gz")
    return tmp_path / "pack.tar.gz"


def _folder_link(tmp_path: Path) -> Path:
    make_pack(tmp_path / "pack")
    (tmp_path / "pack" / METRICS_FILE).unlink()
    (tmp_path / "pack" / METRICS_FILE).symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    return tmp_path / "pack"


def _future(tmp_path: Path) -> Path:
    make_pack(tmp_path / "pack")
    _rewrite_manifest(tmp_path / "pack", lambda d: d.update(format_version=99))
    return tmp_path / "pack"


def _dup(tmp_path: Path) -> Path:
    preds = rows()
    make_pack(tmp_path / "pack", preds=[*preds, preds[-1]])
    return tmp_path / "pack"


def _missing_answer(tmp_path: Path) -> Path:
    make_pack(tmp_path / "pack", preds=rows()[1:])
    return tmp_path / "pack"


def _qid(tmp_path: Path, qid: int) -> Path:
    preds = rows()
    make_pack(tmp_path / "pack", preds=[*preds[:-1], preds[-1].model_copy(update={"qid": qid})])
    return tmp_path / "pack"


def _lang(tmp_path: Path) -> Path:
    preds = rows()
    make_pack(tmp_path / "pack", preds=[*preds[:-1], preds[-1].model_copy(update={"lang": "de"})])
    return tmp_path / "pack"


def _pack(tmp_path: Path, **changes: object) -> Path:
    make_pack(tmp_path / "pack", **changes)
    return tmp_path / "pack"


def _not_a_pack(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("hello")
    return tmp_path / "notes.txt"


def _garbage_archive(tmp_path: Path) -> Path:
    (tmp_path / "x.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    return tmp_path / "x.tar.gz"


CATALOGUE: list[tuple[str, Callable[..., Path], str]] = [
    ("unknown snapshot", lambda t: _pack(t, snapshot={"id": "tiny-2025-06-ffffffffffff"}),
     "snapshot tiny-2025-06-ffffffffffff is not one of this store's"),
    ("wrong content hash", lambda t: _pack(t, snapshot={"content_sha256": "f" * 64}), "content sha256 is 000000000000… here"),
    ("missing file", lambda t: (_edit(t, METRICS_FILE, lambda b: b), (t / "pack" / METRICS_FILE).unlink())[0],
     "file metrics.json listed in the manifest is missing"),
    ("truncated file", lambda t: _edit(t, PREDICTIONS_FILE, lambda b: b[: len(b) // 2]), "predictions.jsonl is truncated"),
    ("extra file", lambda t: (_edit(t, METRICS_FILE, lambda b: b), (t / "pack" / "notes.txt").write_text("hi"))[0],
     "extra file notes.txt is not listed in the manifest"),
    ("changed answer", lambda t: _edit(t, PREDICTIONS_FILE, _swap_letter), "predictions.jsonl does not match its sha256"),
    ("future version", _future, f"format version 99, newer than this clkt reads ({FORMAT_VERSION}): upgrade clkt"),
    ("answered twice", _dup, "is answered twice (en, option-loglik, injected, fr)"),
    ("not answered", _missing_answer, "is not answered (en, option-loglik, base, en); 1 answers are missing in all"),
    ("unknown question", lambda t: _qid(t, 12345), "question 12345 is not in snapshot"),
    ("validation question", lambda t: _qid(t, VAL_QID), "is not a test question of snapshot"),
    ("unknown language", _lang, "answered in language 'de'"),
    ("no cutoff", lambda t: _pack(t, model={"cutoff": None}), "declares no knowledge cutoff"),
    ("out of window", lambda t: _pack(t, model={"cutoff": "2025-03-01"}), "is outside the window of tiny"),
    ("an API model string", lambda t: _pack(t, model={"model": "openai:gpt-4o-mini"}),
     "its model 'openai:gpt-4o-mini' is not a model clkt can load"),
    ("absolute path", lambda t: _good_tar_with(t, _member("/tmp/evil.json")), "'/tmp/evil.json' is an absolute path"),
    ("dot-dot", lambda t: _good_tar_with(t, _member("../evil.json")), "'../evil.json' leaves the archive"),
    ("symlink", lambda t: _link(t, tarfile.SYMTYPE), "'metrics.json' is a link"),
    ("hard link", lambda t: _link(t, tarfile.LNKTYPE), "'metrics.json' is a link"),
    ("fifo", lambda t: _good_tar_with(t, _member("pipe", type=tarfile.FIFOTYPE)), "'pipe' is a special file"),
    ("linked file in a folder", _folder_link, "metrics.json is a link"),
    ("not a pack", _not_a_pack, "is neither a pack folder nor a .tar.gz archive"),
    ("not an archive", _garbage_archive, "not a readable .tar.gz"),
    ("manifest not JSON", lambda t: _edit(t, MANIFEST_FILE, lambda b: b"{nope"), "manifest.json is not JSON"),
]


@pytest.mark.parametrize(("make", "line"), [(m, line) for _, m, line in CATALOGUE], ids=[n for n, _, _ in CATALOGUE])
async def test_a_bad_pack_is_refused_with_one_line_and_the_store_unchanged(
    tmp_path: Path, make: Callable[[Path], Path], line: str,
) -> None:
    assert_refused(tmp_path, await make_store(tmp_path), make, line)


async def test_an_archive_past_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = await make_store(tmp_path)
    before = store_dump(tmp_path)
    res = clkt("submit", str(_too_big(tmp_path, monkeypatch)), "--config", str(cfg))
    assert res.returncode == 2
    assert "its content passes the 1,000-byte limit; nothing was extracted" in res.stderr
    assert store_dump(tmp_path) == before


async def test_every_test_question_counts(tmp_path: Path) -> None:
    """The catalogue's "not answered" is about one answer of the 2 test questions x 2 languages x 2 variants."""
    assert len(rows()) == 2 * 2 * len(TEST_QIDS) == 8
