"""Fixtures of the CLI's tests."""

from __future__ import annotations

import pytest

from clkt.cli import common


@pytest.fixture
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's console 250 columns wide: a test that looks for a long line (a tmp path, a table row) finds it
    unwrapped however long pytest's tmp paths are (pytest-xdist's are longer). The console reads its width once,
    when `clkt.cli` is imported, so COLUMNS set by a test would not reach it."""
    monkeypatch.setattr(common.console, "width", 250)
