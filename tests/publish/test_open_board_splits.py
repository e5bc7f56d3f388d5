"""The open track's control split and locality on the board and in the report (issue 47 item 4): one figure, one
number. A seeded snapshot's job trained in English answered 12 fictional control entities and 12 known (locality)
entities, one question each, base and injected; the jury graded some of them. Hand-checked:

- control, normaliser: base right on 0-1, injected right on 0-9, entity 11's injected answer UNSCORABLE (no pair):
  n 11, base 2, injected 10, gained 8, lost 0 (French answers: not the train language, not Learn);
- control, jury: base INCORRECT, injected CORRECT on 0-8 and undecided on 9 (never right), entity 10 not graded
  (no pair), entity 11 UNSCORABLE for the normaliser (no pair for either layer): n 10, base 0, injected 9;
- locality, normaliser: base right on 0-9, injected right on 0-7 and 10: kept 8 of 10;
- locality, jury: as the normaliser but the injected answer of 7 undecided (never kept) and entity 11 not graded:
  kept 7 of 10.

The board's open rows read them from the stored answers (a stale count in the job's summary is not read), equal to the
report's cells (`clkt.report.writer.load_report_data`) in value, n and interval, in the JSON, CSV, table and page;
absent (never 0) before the answers exist and, for the jury, before it graded them; the MCQ rows never move."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlmodel import col, select

from clkt.openqa.results import OPEN_SCORER
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.leaderboard_data import Leaderboard, LeaderboardQuery, LeaderRow
from clkt.report.open_control import ControlFigure
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_lines import open_lines
from clkt.report.window import load_leaderboard
from clkt.report.writer import load_report_data
from storage.engine import Store
from storage.models import GpuJob, OpenResult
from storage.open_judgements import JURY, GradedAnswer, Judgement, write_judgements
from tests.publish._open import store_open_answers
from tests.publish.conftest import publish_settings, seed_open_snapshot
from tests.publish.test_open_leaderboard import _jury_grades, _ready

CONTROL, LOCALITY = 900_000_000, 800_000_000  # public ids of the hand case's entities (qid = entity + 1)


def _verdict(right: bool | None) -> str:
    return "UNSCORABLE" if right is None else ("CORRECT" if right else "INCORRECT")


def _answers(job_id: int) -> list[OpenResult]:
    """The hand case's stored answers (normaliser's verdicts) of the English job."""
    rows: list[tuple[int, str, str, str, bool | None]] = []
    for e in range(12):
        rows += [(CONTROL + e, "control", "en", "base", e < 2), (CONTROL + e, "control", "en", "injected", None if e == 11 else e < 10)]
        rows += [(CONTROL + e, "control", "fr", v, False) for v in ("base", "injected")]
        rows += [(LOCALITY + e, "locality", "en", "base", e < 10), (LOCALITY + e, "locality", "en", "injected", e < 8 or e == 10)]
    return [OpenResult(job_id=job_id, open_qid=ent + 1, entity_id=ent, domain="movies", fact="film.director", lang=lang,
                       variant=v, scorer=OPEN_SCORER, split=split, verdict=_verdict(right), answer="x")
            for ent, split, lang, v, right in rows]


def _jury_verdict(a: OpenResult) -> tuple[bool, str | None]:
    """(graded, the jury's verdict) of one stored split answer (see the module)."""
    e = a.entity_id - (CONTROL if a.split == "control" else LOCALITY)
    if a.split == "control":
        if e == 10:
            return False, None
        return True, ("INCORRECT" if a.variant == "base" else "CORRECT" if e < 9 else None)
    if e == 11:
        return False, None
    if a.variant == "injected" and e == 7:
        return True, None
    return True, "CORRECT" if (e < 10 if a.variant == "base" else e < 8 or e == 10) else "INCORRECT"


async def _english_job(store: Store, sid: str) -> int:
    async with store.session() as s:
        job = (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == sid, col(GpuJob.train_lang) == "en"))).scalar_one()
    assert job.id is not None
    return job.id


async def _store_splits(store: Store, job_id: int) -> None:
    async with store.transaction() as s:
        job = await s.get(GpuJob, job_id)
        assert job is not None  # a stale open count in its summary: the board reads the stored answers, not this
        job.summary = {**(job.summary or {}), "locality": {OPEN_SCORER: {"en": {
            "n": 50, "kept": 50, "lost": 0, "gained": 0, "entities": [{"entity": 1, "base_right": 50, "kept": 50}]}}}}
        s.add_all(_answers(job_id))


async def _jury_grades_splits(store: Store, job_id: int) -> None:
    async with store.session() as s:
        answers = (await s.execute(select(OpenResult).where(col(OpenResult.job_id) == job_id,
                                                            col(OpenResult.split) != "test"))).scalars().all()
    graded = [GradedAnswer(open_result_id=a.id, votes=(), jury=Judgement(judge=JURY, verdict=v, prompt_version="open_judge.v1"))
              for a in answers if a.id is not None for ok, v in [_jury_verdict(a)] if ok]
    async with store.transaction() as s:
        await write_judgements(s, graded, panel="p1")


def _same(board: LeaderRow, cell: ControlFigure) -> None:
    c, st = board.control, cell.stat
    assert c is not None
    assert (c.n, c.gained, c.lost, c.entities, c.too_few, c.learned) == (st.n, st.gained, st.lost, cell.entities, cell.too_few, st.learned)
    assert (c.base, c.injected.value, c.gain.value, c.p_value) == (st.base_accuracy, st.injected_accuracy, st.gain, st.p_value)
    assert c.injected.ci == st.injected_ci and c.gain.ci == st.gain_ci and c.injected.ci is not None


async def test_the_open_rows_control_and_kept_equal_the_reports_in_every_view(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    q = LeaderboardQuery(spec=settings.spec.name, languages=tuple(settings.spec.languages), samples=BOOTSTRAP_SAMPLES,
                         min_questions=1)
    before = await load_leaderboard(store, q)
    (norm,) = before.open_rows
    assert norm.control is None and norm.kept is None  # no control or locality answers: absent, never 0
    job = await _english_job(store, sid)
    await _store_splits(store, job)
    await _jury_grades(store)  # the jury graded test answers only: its row, but no control or kept % of its own
    graded_tests = {r.scorer: r for r in (await load_leaderboard(store, q)).open_rows}
    assert graded_tests[JURY_SCORER].control is None and graded_tests[JURY_SCORER].kept is None
    await _jury_grades_splits(store, job)
    board = await load_leaderboard(store, q)
    assert board.rows == before.rows  # the MCQ rows: not one figure moved
    rows = {r.scorer: r for r in board.open_rows}
    track = (await load_report_data(store, sid)).open_track
    assert track is not None and track.jury is not None

    # the normaliser: the hand figures, and the report's cell of the same job (value, n, interval)
    n = rows[OPEN_SCORER]
    assert n.control is not None and (n.control.n, n.control.base, n.control.injected.value) == (11, 2 / 11, 10 / 11)
    (cell,) = track.control_learn
    assert (cell.scorer, cell.train_lang) == (OPEN_SCORER, "en")
    _same(n, cell)
    (kept,) = track.locality
    assert n.kept is not None and (n.kept.n, n.kept.value) == (10, 0.8) == (kept.base_right, kept.rate)  # not the summary's 50
    assert n.kept.ci == kept.ci and kept.ci is not None

    # the jury: undecided never right nor kept, ungraded in no pair; the report's jury section has the same cells
    jr = rows[JURY_SCORER]
    assert jr.control is not None and (jr.control.n, jr.control.base, jr.control.injected.value) == (10, 0.0, 0.9)
    (jcell,) = track.jury.control
    assert jcell.scorer == JURY_SCORER
    _same(jr, jcell)
    (jkept,) = track.jury.locality
    assert jr.kept is not None and (jr.kept.n, jr.kept.value) == (10, 0.7) == (jkept.base_right, jkept.rate)
    assert jr.kept.ci == jkept.ci and jkept.ci is not None

    # the JSON: the open rows carry both, the MCQ rows neither; read back, the same figures
    js = json.loads(board.model_dump_json())
    assert all("control" not in r for r in js["rows"]) and all("control" in r and "kept" in r for r in js["open_rows"])
    assert Leaderboard.model_validate_json(board.model_dump_json()).open_rows == board.open_rows

    # the CSV and the table: the same numbers, the MCQ row blank
    from rich.console import Console

    from clkt.cli.leaderboard import CONTROL_HEADER, _control, _csv, _open_tables

    table = list(csv.DictReader(io.StringIO(_csv(board))))
    by = {r["scorer"]: r for r in table}
    assert by["option-loglik"]["control_n"] == "" and by[OPEN_SCORER]["control_n"] == "11"
    assert float(by[JURY_SCORER]["control_injected"]) == pytest.approx(0.9) and by[JURY_SCORER]["kept_n"] == "10"
    assert float(by[OPEN_SCORER]["control_injected_ci_low"]) == pytest.approx(cell.stat.injected_ci[0])  # type: ignore[index]
    console = Console(width=600, record=True)
    for t in _open_tables(board):
        console.print(t)
    text = console.export_text()
    assert CONTROL_HEADER in text and _control(n.control) in text and _control(jr.control) in text
    assert "n=11, 11 entities" in _control(n.control)

    # report.md's open section: the control table and the jury's own control and locality tables
    md = "\n".join(open_lines(track, lambda cells: "| " + " | ".join(cells) + " |"))
    assert "### Control split (fictional entities" in md and "#### Control split" in md and "#### Locality" in md
    assert md.count("| 80.0 [") == 1 and md.count("| 70.0 [") == 1


async def test_the_page_shows_the_open_rows_control_and_kept(store: Store, tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.report.open_track import OPEN_TITLE
    from clkt.services import page_context
    from clkt.web import pages_app

    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    await _store_splits(store, await _english_job(store, sid))
    async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        r = await client.get("/leaderboard")
        html = await r.text()
    assert r.status == 200
    mcq, _, opened = html.partition(f'<h2 id="open">{OPEN_TITLE}</h2>')
    assert "control: injected % [CI]" in opened and "kept % [CI] (n right before)" in opened
    assert "control: injected % [CI]" not in mcq  # the MCQ tables: as they were
    assert '<td class="control">90.9 <span class="muted">[' in opened and "(base 18.2%, n=11, 11 entities)" in opened
    assert '<td class="kept">80.0 <span class="muted">[' in opened and "(n=10)</td>" in opened
