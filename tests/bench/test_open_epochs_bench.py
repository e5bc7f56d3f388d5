"""bench/open_epochs.py refuses what it cannot read, in one line, before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.open_epochs import _figures, main


def test_a_folder_without_a_snapshot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="holds no frozen snapshot"):
        main(["--from", str(tmp_path), "--job", str(tmp_path)])


def test_epochs_the_job_did_not_keep_are_refused(tmp_path: Path) -> None:
    snap = tmp_path / "snapshots" / "demo" / "2026-11-30"
    snap.mkdir(parents=True)
    (snap / "manifest.json").write_text("{}")
    kept = tmp_path / "job" / "checkpoints" / "epoch-2"
    kept.mkdir(parents=True)
    (kept / "adapter_model.safetensors").write_bytes(b"")
    (tmp_path / "job" / "checkpoints" / "epoch-3").mkdir()  # no adapter: not kept
    with pytest.raises(SystemExit, match=r"epochs \[3\] asked, adapters kept for \[2\]"):
        main(["--from", str(tmp_path), "--job", str(tmp_path / "job"), "--epochs", "3"])


def test_rambling_counts_answers_that_read_like_a_document() -> None:
    said = ["Ed Sheeran", "The release type was EP. Number of tracks on the release: 12. The first track is"]
    assert _figures([True, False], said) == {"n": 2, "right": 1, "rambling": 0.5}
    assert _figures([], []) == {"n": 0, "right": 0, "rambling": None}
