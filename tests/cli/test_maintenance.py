"""`clkt gc` (what it frees per category, what it keeps and why, the budget, --dry-run removing nothing) and
`clkt snapshot verify` (a snapshot whose files no longer match their hashes: exit 2 naming the file), through the
real entry (`clkt.cli.main`) on real stores."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clkt.config import Settings
from storage.engine import Store
from tests.retention._data import make_data_dir
from tests.roster._flow import build_june
from tests.test_hostile_catalogue import assert_one_line_error, clkt


def _config(tmp_path: Path, data_dir: Path, extra: str = "") -> Path:
    cfg = tmp_path / "gc.toml"
    cfg.write_text(f'data_dir = "{data_dir}"\n{extra}\n', encoding="utf-8")
    return cfg


def _layout(tmp_path: Path) -> Path:
    async def go() -> Path:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'data' / 'clkt.db'}") as store:
            return (await make_data_dir(store, tmp_path)).data_dir

    return asyncio.run(go())


def test_gc_says_what_it_frees_and_keeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _layout(tmp_path)
    cfg = _config(tmp_path, data)
    dry = clkt(["gc", "--dry-run", "--config", str(cfg)], capsys)
    assert dry.code == 0, dry.err
    assert "would free" in dry.out and "epoch checkpoints" in dry.out and "base caches" in dry.out
    assert "best adapters" in dry.out and "the job's results were measured with it" in dry.out
    assert "within its retention budget" in dry.out
    assert (data / "jobs" / "1" / "checkpoints" / "epoch-1").is_dir()  # a dry run removes nothing

    js = clkt(["gc", "--dry-run", "--json", "--config", str(cfg)], capsys)
    out = json.loads(js.out)
    assert out["freed"]["epoch checkpoints"]["files"] == 8 and out["freed"]["job logs"]["files"] == 2
    assert out["budget"]["within"] is True and out["budget"]["terms"]["done_jobs"] == 1
    assert any(k["category"] == "failed jobs" for k in out["kept"])

    real = clkt(["gc", "--config", str(cfg)], capsys)
    assert real.code == 0 and "freed" in real.out
    assert not (data / "jobs" / "1" / "checkpoints" / "epoch-1").exists()
    assert (data / "jobs" / "1" / "checkpoints" / "epoch-2" / "adapter_model.safetensors").is_file()
    again = json.loads(clkt(["gc", "--json", "--config", str(cfg)], capsys).out)
    assert sum(v["files"] for v in again["freed"].values()) == 0


def test_gc_refuses_a_setting_that_would_remove_what_a_result_references(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _layout(tmp_path)
    run = clkt(["gc", "--config", str(_config(tmp_path, data, '[retention]\nepoch_adapters = "none"'))], capsys)
    assert_one_line_error(run, "would remove each committed job's best adapter")
    assert run.code == 2
    assert (data / "jobs" / "1" / "checkpoints" / "epoch-1").is_dir()  # nothing was touched


def _frozen(tmp_path: Path) -> tuple[Settings, str, Path]:
    async def go() -> tuple[Settings, str, Path]:
        async with Store(  # where make_settings (tests.snapshots.factories) puts the store
            url=f"sqlite+aiosqlite:///{tmp_path / 'data' / 'clkt.db'}") as store:
            settings, res = await build_june(store, tmp_path)
        assert res.snapshot_id is not None and res.path is not None
        return settings, res.snapshot_id, res.path

    return asyncio.run(go())


def test_snapshot_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, sid, folder = _frozen(tmp_path)
    cfg = ["--config", str(tmp_path / "clkt.toml")]
    ok = clkt(["snapshot", "verify", sid[:14], *cfg], capsys)
    assert ok.code == 0 and "files match their sha256" in ok.out and sid in ok.out, ok.err
    with (folder / "questions" / "ja.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("\n")  # one byte: the file no longer matches its hash
    bad = clkt(["snapshot", "verify", sid, *cfg], capsys)
    assert_one_line_error(bad, "questions/ja.jsonl does not match its sha256")
    assert bad.code == 2
    (folder / "questions" / "ja.jsonl").unlink()
    gone = clkt(["snapshot", "verify", sid, *cfg], capsys)
    assert_one_line_error(gone, "questions/ja.jsonl listed in the manifest is missing")
    unknown = clkt(["snapshot", "verify", "nope", *cfg], capsys)
    assert_one_line_error(unknown, "unknown snapshot")


def test_a_moved_data_directory_keeps_its_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The store records a report's folder relative to the data directory (as the daemon writes it now): `gc` in the
    directory moved elsewhere still knows the current report; a row of the absolute shape is read as before."""
    import shutil

    from sqlalchemy import text

    from clkt.report.service import stored_report_path

    data = _layout(tmp_path)
    assert stored_report_path(data / "reports" / "s1", data) == "reports/s1"
    assert stored_report_path(tmp_path / "elsewhere", data) == str((tmp_path / "elsewhere").resolve())

    async def relative() -> None:
        async with Store(url=f"sqlite+aiosqlite:///{data / 'clkt.db'}") as store, store.transaction() as s:
            await s.execute(text("UPDATE snapshot_report SET path = 'reports/' || snapshot_id"))

    def current(cfg: Path) -> int:
        out = json.loads(clkt(["gc", "--dry-run", "--json", "--config", str(cfg)], capsys).out)
        return sum(k["files"] for k in out["kept"] if k["category"] == "current reports")

    before = current(_config(tmp_path, data))  # the absolute shape, in place
    assert before > 0
    asyncio.run(relative())
    moved = tmp_path / "moved"
    shutil.move(data, moved)
    assert current(_config(tmp_path, moved)) == before
