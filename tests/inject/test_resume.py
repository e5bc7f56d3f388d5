"""Kill a job process mid-training (SIGKILL) and rerun it: it resumes after its last saved epoch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.config import EMBEDDED_TARGET, GpuSettings
from clkt.inject.contract import JobOutcome, JobSpec, write_json_atomic
from clkt.layout import FAILURE_FILE, LOG_FILE, OUTCOME_FILE
from tests.conftest import wait_until


def _start(spec_path: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "clkt.inject.run_job", str(spec_path)], stdout=fh, stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.mark.slow
def test_killed_mid_training_resumes_from_last_epoch(tmp_path: Path, data_dir: Path, tiny_snapshot: Path) -> None:
    art = tmp_path / "job"
    art.mkdir()
    spec = JobSpec(
        job_id=7, snapshot_id="tiny", snapshot_dir=tiny_snapshot, target=EMBEDDED_TARGET, strategy="cpt-lora",
        train_lang="fr", gpu=GpuSettings(epochs=3, max_new_tokens=2, max_seq_len=128, torch_threads=2,
                                          scorers=["letter-logprob"]),
        data_dir=data_dir, artifacts_dir=art, device="cpu", base_cache_dir=tmp_path / "base",
    )
    spec_path = art / "spec.json"
    write_json_atomic(spec_path, spec)
    first_state = art / "checkpoints" / "epoch-1" / "state.json"
    proc = _start(spec_path, art / LOG_FILE)

    def epoch_1_saved() -> bool:
        assert proc.poll() is None, (art / LOG_FILE).read_text()[-3000:]
        return first_state.exists()

    wait_until(epoch_1_saved, timeout=240, what="epoch 1 never finished")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (art / OUTCOME_FILE).exists()
    saved = json.loads(first_state.read_text())
    finished_before = sorted(p.name for p in (art / "checkpoints").glob("epoch-*"))
    assert "epoch-3" not in finished_before  # it really was killed mid-training

    proc = _start(spec_path, art / LOG_FILE)
    assert proc.wait(timeout=300) == 0, (art / LOG_FILE).read_text()[-3000:]
    assert not (art / FAILURE_FILE).exists()
    outcome = JobOutcome.model_validate_json((art / OUTCOME_FILE).read_text())
    assert [e.epoch for e in outcome.epochs] == [1, 2, 3]
    assert outcome.epochs[0].loss == pytest.approx(saved["loss"])  # epoch 1 was not trained again
    assert outcome.summary.resumed_after_epoch == len(finished_before) >= 1
    assert "resuming after epoch" in (art / LOG_FILE).read_text()
    assert all(e.val_accuracy is not None for e in outcome.epochs)
    assert 1 <= outcome.best_epoch <= 3
