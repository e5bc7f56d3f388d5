"""The `/leaderboard` page's comparison of two strategies of one target (fields sa, sb, st): Learn base ->
injected of each, the side-by-side lines, and its bad inputs as a 400 with the reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.services import page_context
from clkt.web import pages_app
from storage.engine import Store
from tests.report._strategy_store import seed_strategy_store
from tests.web.seed import settings_for, write_config


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[TestClient]:
    settings = settings_for(write_config(tmp_path, extra='[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n'))
    async with Store(url=settings.resolved_store_url) as store:
        await seed_strategy_store(store)
        async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as c:
            yield c


async def test_the_page_shows_two_strategies_side_by_side(client: TestClient) -> None:
    html = await (await client.get("/leaderboard")).text()
    assert 'name="sa"' in html and "Pick two strategies above" in html and 'id="strategy-comparison"' not in html
    r = await client.get("/leaderboard?sa=cpt-lora&sb=memit&st=alpha")
    html = await r.text()
    assert r.status == 200, html[html.find('id="error"'):][:300]
    for needle in ("cpt-lora against memit on alpha (generate)", 'id="strategy-learn"', 'id="strategy-comparison"',
                   "<td>Learn</td><td>train language</td>", "<td>Transfer</td><td>all pairs</td>", "into ja",
                   '<option value="memit" selected>'):
        assert needle in html, needle
    assert 'id="comparison"' in html  # the targets' comparison stays beside it


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("sa=cpt-lora", "choose two strategies to compare"),
        ("sa=cpt-lora&sb=magic&st=alpha", "unknown strategy &#39;magic&#39;"),
        ("sa=memit&sb=memit&st=alpha", "needs two different strategies"),
        ("sa=cpt-lora&sb=memit", "several targets have results of cpt-lora or memit (alpha, beta)"),
        ("sa=cpt-lora&sb=memit&st=beta", "target beta has results of cpt-lora only, not of memit"),
        ("sa=cpt-lora&sb=sft-lora&st=alpha", "cpt-lora and sft-lora share no question for target alpha"),
    ],
)
async def test_a_bad_strategy_pair_is_400_with_the_reason(client: TestClient, query: str, says: str) -> None:
    r = await client.get(f"/leaderboard?{query}")
    html = await r.text()
    assert r.status == 400 and 'id="error"' in html and says in html, html[html.find('id="error"'):][:300]
