"""A new user's first commands: `clkt --version`, and read commands in a folder without a store say so (one
line naming the path they looked at and how to point at a store), exit non-zero and create nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import clkt
import clkt.cli as cli


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli.main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["--version"], capsys)
    assert code == 0 and err == ""
    assert out.splitlines() == [f"clkt {clkt.__version__}"]


READ_COMMANDS = [
    ["status"], ["status", "--json"], ["entities"], ["snapshot", "list"], ["snapshot", "show", "demo"],
    ["snapshot", "export", "demo", "--format", "native", "--out", "x"], ["snapshot", "verify", "demo"],
    ["snapshot", "diff", "a", "b"], ["report", "demo"], ["leaderboard"], ["audit", "sample", "demo", "--out", "a.csv"],
    ["serve"], ["gc", "--dry-run"],
]


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_read_commands_never_create_a_store(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLKT_CONFIG_FILE", raising=False)
    code, out, err = _run(argv, capsys)
    assert code != 0, out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("clkt: no store here") and "clkt.db" in line and "--config" in line and "clkt demo" in line
    assert str(tmp_path / "clkt-data" / "clkt.db") in line.replace("\n", "")
    assert list(tmp_path.rglob("*")) == []  # nothing created: no data dir, no empty store


def test_a_configured_store_that_is_missing_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n')
    code, _, err = _run(["snapshot", "list", "--config", str(cfg)], capsys)
    assert code == 1 and f"no store here: {tmp_path / 'data' / 'clkt.db'}" in err
    assert not (tmp_path / "data").exists()
