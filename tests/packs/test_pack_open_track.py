"""A result pack holds the MCQ answers only (`clkt.packs.format`): `clkt evaluate`'s jobs never run the open pass,
even on a snapshot with an open track, and the setting is not among what a pack records it was computed with."""

from __future__ import annotations

from pathlib import Path

from clkt.config import GpuSettings, TargetSettings
from clkt.packs.runner import EvaluateRequest, _specs, job_settings
from clkt.snapshots.layout import load_snapshot_dir
from tests.inject._fixtures import write_tiny_snapshot
from tests.inject._open_fixtures import add_open_track


def test_a_packs_jobs_never_run_the_open_pass(tmp_path: Path) -> None:
    snap = load_snapshot_dir(add_open_track(write_tiny_snapshot(tmp_path / "snap")))
    gpu = GpuSettings()
    assert gpu.open_answers  # on by default for the daemon's jobs
    req = EvaluateRequest(snapshot_dir=snap.path, target=TargetSettings(name="t", model="m", cutoff="2024-01-01"),
                          strategy="cpt-lora", train_langs=["en", "fr"], gpu=gpu, out=tmp_path / "pack",
                          data_dir=tmp_path / "data")
    specs = _specs(req, snap, tmp_path / "work", device="cpu")
    assert len(specs) == 2 and not any(s.gpu.open_answers for s in specs)
    assert "open_answers" not in job_settings(gpu)
