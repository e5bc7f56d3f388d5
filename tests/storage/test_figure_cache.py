"""The figure cache's repository (`storage.figure_cache`): entries written by key and read back in chunks, an entry
of the same key written over (one that did not decode is replaced), old entries pruned, and a failed write
reported by name, the caller going on. On SQLite, and on PostgreSQL when CLKT_TEST_PG_URL is set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from storage.engine import Store
from storage.figure_cache import keep_in_figure_cache, prune_figure_cache, read_figure_cache, write_figure_cache
from storage.types import utcnow
from tests.storage._urls import BACKENDS, empty_store_url


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with Store(url=await empty_store_url(request.param, tmp_path / "clkt.db")) as store:
        yield store


async def test_entries_are_written_over_read_in_chunks_and_pruned(any_store: Store) -> None:
    many = {f"{i:064x}": bytes([i % 256]) * 3 for i in range(1000)}  # more keys than one query's chunk
    async with any_store.transaction() as s:
        assert await write_figure_cache(s, "row", many) == 1000
        assert await write_figure_cache(s, "row", {f"{7:064x}": b"new"}) == 1  # the same key: written over
    async with any_store.session() as s:
        got = await read_figure_cache(s, [*many, "f" * 64])
    assert len(got) == 1000 and got[f"{7:064x}"] == b"new" and got[f"{8:064x}"] == b"\x08" * 3
    async with any_store.transaction() as s:
        assert await prune_figure_cache(s, older_than=utcnow() - timedelta(days=1)) == 0
        assert await prune_figure_cache(s, older_than=utcnow() + timedelta(seconds=1)) == 1000
    async with any_store.session() as s:
        assert await read_figure_cache(s, many) == {}


async def test_a_failed_write_is_reported_and_leaves_nothing(any_store: Store) -> None:
    bad = {"k" * 65: b"x"}  # one key past the column's 64 characters: PostgreSQL refuses it; SQLite does not check
    error = await keep_in_figure_cache(any_store, {"row": {"a" * 64: b"1"}, "scored": bad}, older_than=utcnow() - timedelta(days=90))
    async with any_store.session() as s:
        got = await read_figure_cache(s, ["a" * 64])
    if any_store.is_sqlite:
        assert error is None and got == {"a" * 64: b"1"}
    else:
        assert error == "DBAPIError" and got == {}  # one transaction: the row written first is gone too
