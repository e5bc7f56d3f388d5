from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def models_data_dir() -> Path:
    """A data dir whose `models/` survives between test sessions (the bundled models convert once)."""
    root = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or Path(tempfile.gettempdir()) / "clkt-test-data")
    root.mkdir(parents=True, exist_ok=True)
    return root
