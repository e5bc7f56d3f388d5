"""The device check's code path, on the CPU with a tiny config: `bash bench/gpu_check.sh --tiny` runs our job
code end to end (random weights built from a config, a tokenizer trained on the spot, LoRA training with
checkpointing off and on, every scorer; then the `memit` strategy as a job runs it on a synthetic snapshot with
typed facts, and the edited model answered) and ends with its JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.evaluate.memory import CPU_AUTO_BATCH, CPU_AUTO_GENERATE_BATCH
from clkt.inject.editing.corpus import stats_corpus
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

    m = f["memit"]  # knowledge editing: requests from the snapshot's facts.jsonl, MEMIT's band of the 6 layers
    assert m["layers"] == [1, 2] and 16 <= m["requests"] <= 40 and m["entities_from_facts"] == m["subjects"] == 4
    assert m["entities_from_documents"] == 0
    # the statistics: computed once (3,000 tokens at most in --tiny), cached per layer, read back by a second call
    assert m["stats_computed"] is True and 1000 < m["stats_tokens"] <= 3000 and m["stats_reread_cached"] is True
    corpus = f"corpus{stats_corpus().sha256[:12]}.safetensors"  # cached per layer over the fixed corpus
    assert [name.split("-")[-2:] for name in m["stats_cache_files"]] == [["layer1", corpus], ["layer2", corpus]]
    assert all((tmp_path / "work" / "edit-stats" / name).is_file() for name in m["stats_cache_files"])
    # the edit fitted: the targets' NLL fell with the optimised values and on the weights as written
    # (tiny, seeded: 10.56 -> 10.30 with the values, 10.40 after the update, which writes half of each residual)
    assert m["target_nll_at_z"] < m["target_nll_before"] - 0.1 and m["target_nll_after"] < m["target_nll_before"] - 0.05
    assert all(0.1 < w <= 1.0 for w in m["written"].values()) and all(n > 0 for n in m["delta_norms"].values())
    for k in ("requests_seconds", "stats_seconds", "values_seconds", "update_seconds"):
        assert m[k] >= 0
    assert m["edit_seconds"] >= m["values_seconds"] + m["update_seconds"] - 0.01
    assert m["eval_qps_letter_logprob"] > 0 and m["eval_batch_letter_logprob"] == CPU_AUTO_BATCH
    assert m["test_questions"] == 15  # the snapshot's test questions, as many as the cpt part's in --tiny
    assert set(line["goals"]) == {"total_s", "gc_peak_memory_ratio", "memit.target_nll_after", "memit.stats_reread_cached"}
