"""The whole config is checked before anything starts, by every command that reads it: a target whose knowledge
cutoff is neither set nor known is one line and exit 2 from `clkt run` and `clkt status` alike, with no store
written and no endpoint started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import clkt.cli as cli
from tests.conftest import REPO


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[[spec.targets]]\nname = "mystery"\nmodel = "acme/unknown-7b"\n')
    return cfg


def _refused(code: int, err: str, tmp_path: Path) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("clkt:") and "spec.targets[mystery].cutoff" in lines[0], err
    assert not (tmp_path / "data").exists()  # no store, no data dir, no daemon.json


def test_run_refuses_a_target_without_a_cutoff_before_starting(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "clkt.cli", "run", "--config", str(_config(tmp_path))],
                         capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    _refused(res.returncode, res.stderr, tmp_path)


@pytest.mark.parametrize("argv", [["status"], ["entities"], ["snapshot", "list"], ["db", "upgrade"]],
                         ids=" ".join)
def test_every_command_checks_the_cutoffs(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path)
    capsys.readouterr()
    try:
        cli.main([*argv, "--config", str(cfg)])
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    _refused(code, capsys.readouterr().err, tmp_path)
