"""Root fixtures: an isolated environment, a real SQLite store in tmp_path, a condition waiter."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from storage.engine import Store

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("CLKT_"):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    async with Store(url=db_url) as s:
        yield s


async def wait_for(cond: Callable[[], object], *, timeout: float = 10.0, interval: float = 0.02) -> None:
    """Wait on a condition (sync or async callable), never on a fixed sleep."""
    deadline = time.monotonic() + timeout
    while True:
        res = cond()
        if asyncio.iscoroutine(res):
            res = await res
        if res:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {cond}")
        await asyncio.sleep(interval)


@pytest.fixture(scope="session")
def shared_models_dir() -> Path:
    """A `models/` folder that survives between tests and runs, so the bundled GGUF converts once."""
    root = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or "/tmp/clkt-test-data") / "models"
    root.mkdir(parents=True, exist_ok=True)
    return root
