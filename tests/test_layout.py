"""The data directory's layout (`clkt.layout`): the names that build a path are the names that read it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt import layout


def test_a_jobs_folder_and_its_base_cache_under_the_data_dir() -> None:
    data = Path("/d")
    assert layout.job_dir(data, 7) == data / "jobs" / "7"
    assert layout.base_cache_dir(data, "s-2025-06") == data / "jobs" / "base" / "s-2025-06"
    assert layout.board_cache_dir(data) == data / "cache" / "leaderboard"
    assert layout.epoch_dir(data / "jobs" / "7" / layout.CKPT_DIR, 3) == data / "jobs" / "7" / "checkpoints" / "epoch-3"


@pytest.mark.parametrize(("name", "epoch"), [("epoch-3", 3), ("epoch-12", 12), ("epoch-", None), ("epoch-x", None),
                                             ("3", None), (".epoch-3.tmp", None)])
def test_an_epoch_folder_name_reads_back(name: str, epoch: int | None) -> None:
    assert layout.epoch_of(name) == epoch
    if epoch is not None:
        assert layout.epoch_dir(Path("c"), epoch).name == name


def test_a_base_cache_name_reads_back_its_target() -> None:
    key = "0123456789abcdef"
    assert len(key) == layout.BASE_CACHE_KEY_HEX
    for target in ("gemma-3-270m", "t", "a-b-c"):
        assert layout.base_cache_target(layout.base_cache_name(target, key)) == target
    for other in ("gemma.jsonl", "t-0123.jsonl", f"t-{key}.json", f"t_{key}.jsonl", f"-{key}.jsonl"):
        assert layout.base_cache_target(other) is None


def test_every_name_in_a_jobs_folder_is_distinct() -> None:
    names = [layout.SPEC_FILE, layout.OUTCOME_FILE, layout.FAILURE_FILE, layout.PROGRESS_FILE, layout.LOG_FILE,
             layout.PREDICTIONS_FILE, layout.CKPT_DIR]
    assert len(set(names)) == len(names)
    assert len({layout.STATE_FILE, layout.OPTIM_FILE, layout.VAL_FILE}) == 3
