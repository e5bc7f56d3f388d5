from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.engine import Store
from tests.cli.conftest import wide_console  # noqa: F401 - the CLI tests' fixture, for the submit tests here
from tests.packs._packs import make_store


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[Store]:
    """The tiny snapshot's store (`make_store`, its config at tmp_path / "clkt.toml"), open: what `POST /packs` writes."""
    await make_store(tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        yield store
