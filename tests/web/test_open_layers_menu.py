"""The open track's layers in the web pages' scorer menus (issue 47), over HTTP on a real loopback server: the
`/leaderboard` and `/leaderboard/domains` menus offer `open-normaliser` and `open-jury` once the store holds open
answers, and choosing `open-jury` shows the jury's rows, the figures `clkt leaderboard --scorer open-jury` shows;
`/leaderboard/open-predictions.csv` is the `--open-predictions` file of the same window, the jury's columns included."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.config import Settings
from clkt.openqa.results import OPEN_SCORER
from clkt.report.leaderboard_data import Estimate, LeaderboardQuery
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_predictions import write_open_predictions
from clkt.report.open_track import OPEN_TITLE
from clkt.report.window import load_leaderboard
from clkt.services import page_context
from clkt.web import pages_app
from storage.engine import Store
from tests.publish._open import store_open_answers
from tests.publish.conftest import publish_settings, seed_open_snapshot
from tests.publish.test_open_leaderboard import _jury_grades, _ready


@asynccontextmanager
async def _client(settings: Settings, store: Store) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        yield client


@pytest.fixture
async def open_store(store: Store, tmp_path: Path) -> tuple[Settings, Store]:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    return settings, store


def _est(e: Estimate) -> str:
    """An estimate as the page's `est` macro writes it."""
    assert e.value is not None and e.ci is not None
    return f'{100 * e.value:.1f} <span class="muted">[{100 * e.ci[0]:.1f}, {100 * e.ci[1]:.1f}]</span>'


async def test_the_menus_offer_the_open_layers_once_there_are_open_answers(open_store: tuple[Settings, Store]) -> None:
    settings, store = open_store
    async with _client(settings, store) as client:
        html = await (await client.get("/leaderboard")).text()
        assert f'<option value="{OPEN_SCORER}"' not in html and f'<option value="{JURY_SCORER}"' not in html
        await store_open_answers(store, (await load_leaderboard(store, LeaderboardQuery(spec=settings.spec.name, samples=0)))
                                 .snapshots[0].snapshot_id)
        for page in ("/leaderboard", "/leaderboard/domains"):
            r = await client.get(page)
            html = await r.text()
            assert r.status == 200, html
            assert f'<option value="{OPEN_SCORER}">' in html and f'<option value="{JURY_SCORER}">' in html, page


async def test_choosing_open_jury_shows_the_jurys_rows_as_the_cli_does(open_store: tuple[Settings, Store]) -> None:
    settings, store = open_store
    board = await load_leaderboard(store, LeaderboardQuery(spec=settings.spec.name, samples=0))
    await store_open_answers(store, board.snapshots[0].snapshot_id)
    await _jury_grades(store)
    q = LeaderboardQuery(spec=settings.spec.name, cadence=settings.snapshot.cadence, scorer=JURY_SCORER,
                         languages=tuple(settings.spec.languages), names=("from", "to"))
    cli = await load_leaderboard(store, q)  # what `clkt leaderboard --scorer open-jury` computes
    assert cli.rows == [] and [r.scorer for r in cli.open_rows] == [JURY_SCORER]
    row = cli.open_rows[0]
    async with _client(settings, store) as client:
        r = await client.get(f"/leaderboard?scorer={JURY_SCORER}")
        html = await r.text()
        assert r.status == 200, html
        assert f'<option value="{JURY_SCORER}" selected>' in html
        mcq, _, opened = html.partition(f'<h2 id="open">{OPEN_TITLE}</h2>')
        assert "option-loglik</h3>" not in mcq and f"{OPEN_SCORER}</h3>" not in html
        assert f"cpt-lora, {JURY_SCORER}</h3>" in opened
        assert f"{_est(row.learn.injected)} (n={row.learn.n})" in opened  # one figure, one number: the CLI's
        overall = row.metric("overall")
        assert f"{_est(overall)} (n={overall.n})" in opened
        png = await client.get(f"/leaderboard/trend.png?scorer={JURY_SCORER}")
        assert png.status == 200 and (await png.read()).startswith(b"\x89PNG")
        domains = await client.get(f"/leaderboard/domains?scorer={JURY_SCORER}")
        assert domains.status == 200 and f'<option value="{JURY_SCORER}" selected>' in await domains.text()


async def test_the_open_predictions_download_is_the_clis_file(open_store: tuple[Settings, Store], tmp_path: Path) -> None:
    settings, store = open_store
    board = await load_leaderboard(store, LeaderboardQuery(spec=settings.spec.name, samples=0))
    await store_open_answers(store, board.snapshots[0].snapshot_id)
    await _jury_grades(store)
    async with _client(settings, store) as client:
        html = await (await client.get(f"/leaderboard?scorer={JURY_SCORER}")).text()
        assert f'href="/leaderboard/open-predictions.csv?scorer={JURY_SCORER}"' in html
        for scorer in ("", JURY_SCORER):
            q = LeaderboardQuery(spec=settings.spec.name, cadence=settings.snapshot.cadence, scorer=scorer or None,
                                 languages=tuple(settings.spec.languages), names=("from", "to"))
            path = tmp_path / f"open{scorer}.csv"
            n = await write_open_predictions(store, q, path)  # `clkt leaderboard --open-predictions`
            r = await client.get(f"/leaderboard/open-predictions.csv?scorer={scorer}")
            assert r.status == 200 and r.headers["Content-Disposition"] == 'attachment; filename="open-predictions.csv"'
            body = await r.text()
            assert body == path.read_text(encoding="utf-8") and len(body.splitlines()) == n + 1 > 2
            assert "jury_verdict" in body.splitlines()[0]
        r = await client.get("/leaderboard/open-predictions.csv?to=1999-01")
        assert r.status == 400 and "no snapshot of spec" in await r.text()
