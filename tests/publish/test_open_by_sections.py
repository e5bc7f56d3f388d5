"""The open track's sections of `clkt leaderboard --by domain|size|asymmetry` (issue 47): one per scoring layer
(open-normaliser; open-jury where the jury graded), after the multiple-choice tables, computed by the same metric
table and draws over entities and never pooled with an MCQ scorer's; the `all` cell of a layer is its leaderboard
row (one figure, one number: the value, the interval, the questions and the "too few" flag)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from clkt.openqa.results import OPEN_SCORER
from clkt.report.by_domain import DomainBoard
from clkt.report.domain_board import load_domain_board
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.metrics import ALL_DOMAINS, AVG_DOMAINS
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_track import OPEN_TITLE
from clkt.report.window import load_leaderboard
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.publish._open import TARGET, store_open_answers
from tests.publish.conftest import publish_settings, seed_open_snapshot
from tests.publish.test_open_leaderboard import _jury_grades, _ready

SAMPLES = 200
OPEN = {OPEN_SCORER, JURY_SCORER}


async def test_each_open_layer_has_its_own_cells_and_its_all_cell_is_its_row(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    sizes = {TARGET: ("gemma", 0.27)}
    for min_questions in (1, 50):  # 50: every open cell is too few, as its row is
        q = LeaderboardQuery(spec=settings.spec.name, languages=tuple(settings.spec.languages), samples=SAMPLES,
                             min_questions=min_questions)
        if min_questions == 1:
            before = await load_domain_board(store, q, sizes=sizes)
            assert before.cells and before.open_cells == [] and "open_cells" not in json.loads(before.model_dump_json())
            await store_open_answers(store, sid)
            await _jury_grades(store)  # the jury grades all but the Japanese answers
        board = await load_domain_board(store, q, sizes=sizes)
        if min_questions == 1:
            assert board.cells == before.cells and board.sizes == before.sizes and board.asymmetry == before.asymmetry
        assert {c.scorer for c in board.cells} == {"option-loglik"} and {c.scorer for c in board.open_cells} == OPEN
        assert {p.scorer for p in board.open_sizes} == OPEN and {a.scorer for a in board.open_asymmetry} == OPEN
        assert not {p.scorer for p in board.sizes} & OPEN and not {a.scorer for a in board.asymmetry} & OPEN
        rows = {r.scorer: r for r in (await load_leaderboard(store, q)).open_rows}
        assert set(rows) == OPEN
        for scorer, row in rows.items():
            cells = {c.domain: c for c in board.open_cells if c.scorer == scorer}
            assert set(cells) == {"movies", ALL_DOMAINS, AVG_DOMAINS}  # the open questions ask about the movies
            every = cells[ALL_DOMAINS]
            assert (every.questions, every.too_few, every.entities) == (row.questions, row.too_few, row.entities)
            assert every.too_few is (min_questions == 50) and every.questions > 0
            point = next(p for p in board.open_sizes if p.scorer == scorer)
            for key in ("overall", "transfer"):
                m, e = every.metrics[key], row.metric(key)
                assert (m.mean is None) == (e.value is None), (scorer, key)
                if e.value is not None:
                    assert m.mean == pytest.approx(e.value, abs=1e-12) and m.ci == pytest.approx(e.ci, abs=1e-12)
                    assert m.n == e.n and point.metrics[key].value == pytest.approx(e.value, abs=1e-12)
        assert rows[JURY_SCORER].metric("overall").value != rows[OPEN_SCORER].metric("overall").value


async def test_the_command_prints_the_open_sections_after_the_mcq_tables(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None, store_url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}")
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    cfg = str(tmp_path / "clkt.toml")
    base = ("leaderboard", "--config", cfg, "--bootstrap", "100")
    ran = clkt(*base, "--by", "asymmetry", "--csv")
    assert ran.returncode == 0, ran.stderr  # no open answer: the CSV as it was, no format column
    assert ran.stdout.splitlines()[0] == "target,strategy,scorer,lang_1,lang_2,forward,backward,p_value,stronger"
    await store_open_answers(store, sid)
    await _jury_grades(store)

    ran = clkt(*base, "--by", "domain", columns=400)
    assert ran.returncode == 0, ran.stderr
    mcq, _, opened = ran.stdout.partition(OPEN_TITLE)
    assert opened and "option-loglik" in mcq and OPEN_SCORER not in mcq and JURY_SCORER not in mcq
    assert f"cpt-lora, {OPEN_SCORER} (normaliser layer)" in opened and f"cpt-lora, {JURY_SCORER} (jury layer)" in opened
    assert "option-loglik" not in opened and "(too few)" in opened  # under 50 questions: said so, as a row is

    ran = clkt(*base, "--by", "domain", "--json")
    board = DomainBoard.model_validate_json(ran.stdout)
    assert {c.scorer for c in board.cells} == {"option-loglik"} and {c.scorer for c in board.open_cells} == OPEN
    ran = clkt(*base, "--by", "domain", "--csv")
    table = list(csv.DictReader(ran.stdout.splitlines()))
    assert [r["format"] for r in table] == ["mcq"] * len(board.cells) + ["open"] * len(board.open_cells)
    got = {(r["scorer"], r["domain"]): r for r in table if r["format"] == "open"}
    for c in board.open_cells:  # the CSV's figures are the JSON's
        r = got[(c.scorer, c.domain)]
        assert (r["overall_n"], r["questions"], r["too_few"]) == (str(c.metrics["overall"].n), str(c.questions), str(c.too_few))
        assert float(r["overall_mean"]) == pytest.approx(c.metrics["overall"].mean, abs=1e-6)
    ran = clkt(*base, "--by", "asymmetry", "--csv")
    table = list(csv.DictReader(ran.stdout.splitlines()))
    assert {(r["scorer"], r["format"]) for r in table} == {("option-loglik", "mcq"), (OPEN_SCORER, "open"), (JURY_SCORER, "open")}

    ran = clkt(*base, "--by", "domain", "--json", "--scorer", JURY_SCORER)  # one layer asked for: its cells only
    only = DomainBoard.model_validate_json(ran.stdout)
    assert only.cells == [] and {c.scorer for c in only.open_cells} == {JURY_SCORER}
    assert [c.metrics for c in only.open_cells] == [c.metrics for c in board.open_cells if c.scorer == JURY_SCORER]


async def test_the_domains_page_shows_the_open_layers_apart(store: Store, tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.services import page_context
    from clkt.web import pages_app

    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    await _jury_grades(store)
    async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        r = await client.get("/leaderboard/domains")
        html = await r.text()
    assert r.status == 200, html
    mcq, _, opened = html.partition(f'<section id="open">\n<h2>{OPEN_TITLE}</h2>')
    assert opened and "cpt-lora, option-loglik</h3>" in mcq and f"{OPEN_SCORER}</h3>" not in mcq.split('id="table2"')[1]
    assert f'cpt-lora, {JURY_SCORER} <span class="muted">(jury layer)</span></h3>' in opened
    assert f'cpt-lora, {OPEN_SCORER} <span class="muted">(normaliser layer)</span></h3>' in opened
    assert '<span class="flag">too few</span>' in opened and "option-loglik" not in opened
