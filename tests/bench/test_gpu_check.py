"""The device check's code path, on the CPU with a tiny config: `bash bench/gpu_check.sh --tiny` runs our job
code end to end (random weights built from a config, a tokenizer trained on the spot, LoRA training with
checkpointing off and on, every scorer) and ends with its JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.evaluate.memory import CPU_AUTO_BATCH, CPU_AUTO_GENERATE_BATCH
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_gpu_check_tiny_runs_the_job_code_and_reports(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OUT": str(tmp_path / "out"), "PYTHON": sys.executable}
    res = subprocess.run(["bash", str(REPO / "bench/gpu_check.sh"), "--tiny", "--work", str(tmp_path / "work")],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=540)
    assert res.returncode == 0, res.stderr[-3000:]
    line = json.loads(res.stdout.strip().splitlines()[-1])
    assert line["bench"] == "gpu_check" and line["met"] is True
    f = line["figures"]
    for tag in ("gc_off", "gc_on"):
        assert f[f"train_tokens_per_s_{tag}"] > 0 and f[f"train_tokens_{tag}"] > 0
    assert f["train_tokens_gc_on"] == f["train_tokens_gc_off"]
    automatic = {"generate": CPU_AUTO_GENERATE_BATCH, "letter_logprob": CPU_AUTO_BATCH, "option_loglik": CPU_AUTO_BATCH}
    for scorer, size in automatic.items():
        assert f[f"eval_qps_{scorer}"] > 0 and f[f"eval_batch_{scorer}"] == size  # the automatic size on a CPU
    assert json.loads((tmp_path / "out" / "gpu_check.json").read_text()) == line
