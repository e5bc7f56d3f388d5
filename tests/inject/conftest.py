from __future__ import annotations

from pathlib import Path

import pytest

from tests.inject._fixtures import write_tiny_snapshot
from tests.targets.conftest import models_data_dir  # noqa: F401 - the shared fixture, for these tests


@pytest.fixture()
def data_dir(tmp_path: Path, models_data_dir: Path) -> Path:  # noqa: F811 - the fixture imported above
    """A fresh data dir that shares the converted bundled models."""
    d = tmp_path / "data"
    d.mkdir()
    (models_data_dir / "models").mkdir(exist_ok=True)
    (d / "models").symlink_to(models_data_dir / "models", target_is_directory=True)
    return d


@pytest.fixture()
def tiny_snapshot(tmp_path: Path) -> Path:
    return write_tiny_snapshot(tmp_path / "snapshot")


@pytest.fixture()
def tiny_target(tmp_path: Path) -> Path:
    """A tiny random Llama and its word-level tokenizer as a transformers folder (a local target)."""
    from tests.evaluate._tiny import tiny_model, tiny_tokenizer

    folder = tmp_path / "tiny-model"
    tiny_model("llama", seed=3).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder
