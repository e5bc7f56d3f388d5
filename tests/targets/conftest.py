from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# read at import: the root conftest clears CLKT_* variables around each test
_MODELS_DIR = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or Path(tempfile.gettempdir()) / "clkt-test-data")


@pytest.fixture(scope="session")
def models_data_dir() -> Path:
    """A data dir whose `models/` survives between test sessions (the bundled models convert once)."""
    root = _MODELS_DIR
    root.mkdir(parents=True, exist_ok=True)
    return root
