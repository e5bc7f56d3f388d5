"""Fixtures of the page tests: a seeded store and the pages application on a real loopback server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.config import Settings
from clkt.services import page_context
from clkt.web import pages_app
from storage.engine import Store
from tests.web.seed import seed, settings_for, write_config


@dataclass
class Pages:
    client: TestClient
    settings: Settings
    store: Store
    ids: dict[str, int]
    root: Path


@pytest.fixture
async def pages(tmp_path: Path) -> AsyncIterator[Pages]:
    settings = settings_for(write_config(tmp_path, extra='[agents]\nmonthly_budget_usd = 20.0'))
    async with Store(url=settings.resolved_store_url) as store:
        ids = await seed(store, settings, tmp_path)
        async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
            yield Pages(client=client, settings=settings, store=store, ids=ids, root=tmp_path)
