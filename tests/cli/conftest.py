"""Fixtures of the CLI's tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clkt.cli import common
from storage.engine import Store
from tests.inject._fixtures import seed_store, write_tiny_snapshot


@pytest.fixture
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's console 250 columns wide: a test that looks for a long line (a tmp path, a table row) finds it
    unwrapped however long pytest's tmp paths are (pytest-xdist's are longer). The console reads its width once,
    when `clkt.cli` is imported, so COLUMNS set by a test would not reach it."""
    monkeypatch.setattr(common.console, "width", 250)


@pytest.fixture
def tiny_store(tmp_path: Path) -> Path:
    """A store in tmp_path holding the tiny frozen snapshot (`tests.inject._fixtures.SNAPSHOT_ID`, spec `tiny`); its
    config file (data_dir = tmp_path) returned."""
    async def seed() -> None:
        snap = write_tiny_snapshot(tmp_path / "snap")
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
            await seed_store(store, snap)

    asyncio.run(seed())
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')
    return cfg
