"""Three simulated months of the real daemon (`clkt run` on a simulated calendar, against the replay server's
living upstream), as bench/year.py runs the year, at a reduced rate and without GPU jobs: three snapshots, each
frozen once within a simulated day after its month closed, no entity in two snapshots, no failed and no stuck
task. Three sources at one entity a week each, short probe answers: about four minutes of real time (slow: a
daemon process and the embedded target model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_three_simulated_months(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "year.py"), "--months", "3", "--speed", "28800", "--rate", "1",
         "--sources", "tmdb,thesportsdb,usgs", "--probe-tokens", "8", "--add-target-month", "0",
         "--gpu-from-month", "0", "--max-wall-min", "8", "--keep", str(tmp_path / "year")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    f = out["figures"]
    months = f["months"]
    assert [m["period"] for m in months] == ["2026-01", "2026-02", "2026-03"]
    assert f["snapshots"] == 3 and f["frozen_once"] is True, months
    assert all(m["snapshot_rows"] == 1 and m["entities"] > 0 for m in months), months
    assert all(0 <= m["froze_after_close_h"] <= 24 for m in months), months
    assert f["entities_in_two_snapshots"] == 0
    assert f["tasks"].get("failed", 0) == 0 and f["stuck"] == 0, f["tasks"]
    assert all(r.get("stop_rc") == 0 for r in f["restarts"])
