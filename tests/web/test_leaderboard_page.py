"""The `/leaderboard` page over HTTP (aiohttp's test client on a real loopback server): the window's tables, the
paired comparison, the known-rate curves, the PNGs and the predictions CSV it links to, its bad inputs, and the
same guards as every page (GET/HEAD only, the Host check, the CSP, crawled text as text)."""

from __future__ import annotations

import csv
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.services import page_context
from clkt.web import pages_app
from storage.engine import Store
from storage.questions import ProbeRecord, add_probes
from tests.report._window_store import WindowStore, seed_window_store
from tests.web.seed import HOSTILE_NAME, settings_for, write_config


@dataclass
class Board:
    client: TestClient
    info: WindowStore


async def seed_probes(store: Store) -> None:
    """Verdicts on the window's entities: alpha knew a few, a target with a hostile name knew none."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [ProbeRecord(entity_id=e, target_model=t, lang="en", prompt="p", response="r", known=(t == "alpha" and e % 5 == 0),
                        matched_facts=(), reason="", judge="fact-matcher", prompt_version="v", created_at=when)
            for e in range(1, 37) for t in ("alpha", HOSTILE_NAME)]
    async with store.transaction() as s:
        await add_probes(s, rows)


@pytest.fixture
async def board(tmp_path: Path) -> AsyncIterator[Board]:
    settings = settings_for(write_config(tmp_path, extra='[spec]\nname = "lb"\nlanguages = ["en", "fr", "ja"]\n'))
    async with Store(url=settings.resolved_store_url) as store:
        info = await seed_window_store(store)
        await seed_probes(store)
        async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
            yield Board(client=client, info=info)


async def test_the_page_shows_the_window_the_comparison_and_the_curves(board: Board) -> None:
    r = await board.client.get("/leaderboard")
    html = await r.text()
    assert r.status == 200
    for needle in ('id="window"', 'name="from"', 'name="to"', '<option value="2025-02">2025-02</option>', "Window 2025-01 .. 2025-03",
                   "cpt-lora, generate", "cpt-lora, option-loglik", 'class="leaderboard"', 'class="per-snapshot"', "not valid",
                   'id="trend" src="/leaderboard/trend.png"', 'table class="heat"', 'class="heat-',
                   "on the <strong>66 questions</strong> valid for both", 'id="comparison"', "into ja",
                   'href="/leaderboard/predictions.csv"', 'id="cutoffs"', 'id="known-rate" src="/leaderboard/known-rate.png"',
                   'href="/leaderboard" class="active"'):
        assert needle in html, needle
    assert '<option value="alpha" selected>' in html and '<option value="beta" selected>' in html  # compared by default
    # the window chosen by the two selectors (a plain GET form)
    html = await (await board.client.get("/leaderboard?from=2025-02&to=2025-03&scorer=generate&a=beta&b=alpha")).text()
    assert "Window 2025-02 .. 2025-03" in html and "cpt-lora, option-loglik" not in html
    assert "beta (generate) against alpha (generate)" in html and 'href="/leaderboard/predictions.csv?from=2025-02&amp;to=2025-03&amp;scorer=generate"' in html


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("from=2025-03&to=2025-01", "from 2025-03 is after to 2025-01"),
        ("from=garbage", "from: invalid period &#39;garbage&#39; for the monthly cadence"),
        ("to=2024-06", "no snapshot of spec &#39;lb&#39; in the window first .. 2024-06"),
        ("strategy=magic", "unknown strategy &#39;magic&#39;"),
        ("scorer=vibes", "unknown scorer &#39;vibes&#39;"),
        ("a=alpha&b=gamma", "unknown target &#39;gamma&#39;"),
        ("a=alpha", "choose two targets to compare"),
    ],
)
async def test_a_query_the_store_cannot_answer_is_400_with_the_reason(board: Board, query: str, says: str) -> None:
    r = await board.client.get(f"/leaderboard?{query}")
    html = await r.text()
    assert r.status == 400 and 'id="error"' in html and says in html, html[html.find('id="error"'):][:300]
    assert 'id="window"' in html  # the form stays, to fix the query


async def test_the_images_and_the_predictions_csv(board: Board) -> None:
    for path in ("/leaderboard/trend.png", "/leaderboard/trend.png?from=2025-02", "/leaderboard/known-rate.png"):
        r = await board.client.get(path)
        assert r.status == 200 and r.content_type == "image/png", path
        assert (await r.read()).startswith(b"\x89PNG")
    assert (await board.client.get("/leaderboard/trend.png?from=nope")).status == 400
    r = await board.client.get("/leaderboard/predictions.csv?scorer=generate&from=2025-01&to=2025-01")
    assert r.status == 200 and r.content_type == "text/csv" and "attachment" in r.headers["Content-Disposition"]
    rows = list(csv.reader((await r.text()).splitlines()))
    assert rows[0][:3] == ["snapshot_id", "qid", "lang"]  # the public qid, as in the snapshot's files
    assert {x[0] for x in rows[1:]} == {board.info.snapshots["2025-01"]} and {x[8] for x in rows[1:]} == {"generate"}
    assert len(rows) - 1 == 2 * 36 * 3 * 2 * 2  # two targets, 36 questions, 3 languages, base + injected, 2 train languages
    assert (await board.client.get("/leaderboard/predictions.csv?to=1999-01")).status == 400


async def test_the_guards_and_crawled_text(board: Board) -> None:
    c = board.client
    assert (await c.post("/leaderboard")).status == 405
    assert (await c.get("/leaderboard", headers={"Host": "rebind.example"})).status == 421
    r = await c.get("/leaderboard")
    assert "script-src 'self'" in r.headers["Content-Security-Policy"] and "'unsafe-inline'" not in r.headers["Content-Security-Policy"]
    html = await r.text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # a target's name is text
    assert "<script" not in html.split("</head>", 1)[1]  # no inline script in the body
    assert (await c.head("/leaderboard")).status == 200
    assert 'href="/leaderboard"' in await (await c.get("/")).text()  # linked from the nav
    assert (await c.get("/leaderboard?from=" + "9" * 300)).status == 400


async def test_the_domains_page_shows_table2_sizes_and_asymmetry(board: Board) -> None:
    html = await (await board.client.get("/leaderboard")).text()
    assert 'href="/leaderboard/domains" id="by-domain"' in html
    r = await board.client.get("/leaderboard/domains?from=2025-01&to=2025-02&scorer=generate")
    html = await r.text()
    assert r.status == 200, html
    for needle in ('id="table2"', "Window 2025-01 .. 2025-02", "cpt-lora, generate", "mean ± std (paper)", "[CI] (clkt)",
                   "<td>movies</td>", "<td>avg</td>", 'id="asymmetry"', "<td>en–fr</td>", 'id="sizes"',
                   '<option value="learned" selected>'):
        assert needle in html, needle
    assert "cpt-lora, option-loglik" not in html
    html = await (await board.client.get("/leaderboard/domains?transfer=all")).text()
    assert '<option value="all" selected>' in html
    r = await board.client.get("/leaderboard/domains?transfer=most")
    assert r.status == 400 and "transfer: &#39;most&#39;; known: learned, all" in await r.text()
    r = await board.client.get("/leaderboard/domains?from=2024-01&to=2024-02")
    assert r.status == 400 and "no snapshot of spec" in await r.text()
