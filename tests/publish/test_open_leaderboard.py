"""The open track on `clkt leaderboard` (issue 47): its rows apart from the multiple-choice ones (`open_rows`), by the
same metric table as the report's open-track section, one row per scoring layer (the normaliser's; the jury's where
it has graded: undecided never right, ungraded never filled in), and the MCQ rows unchanged by any open answer."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlmodel import col, select

from clkt.openqa.results import OPEN_SCORER
from clkt.report.leaderboard_data import Leaderboard, LeaderboardQuery
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_track import OPEN_TITLE, open_track
from clkt.report.window import load_leaderboard
from clkt.snapshots.content import load_item_refs
from storage.engine import Store
from storage.enums import SnapshotTargetStatus
from storage.fingerprints import window_fingerprint
from storage.models import OpenResult
from storage.open_judgements import JURY, GradedAnswer, Judgement, write_judgements
from storage.open_results import OpenResultRow, open_results_for_snapshot
from storage.targets import record_snapshot_target
from tests.cli._in_process import clkt
from tests.publish._open import TARGET, store_open_answers
from tests.publish.conftest import publish_settings, seed_open_snapshot

SAMPLES = 200


async def _ready(store: Store, sid: str) -> None:
    async with store.transaction() as s:
        refs = await load_item_refs(s, sid)
        await record_snapshot_target(s, snapshot_id=sid, target=TARGET, status=SnapshotTargetStatus.ready,
                                     entities=len({it.entity_id for it in refs}))


async def _jury_grades(store: Store) -> dict[tuple[int, int, str, str], str | None]:
    """The jury grades every test answer but the Japanese ones (left pending): injected CORRECT, base INCORRECT, the
    first injected answer undecided; its verdict per (job, qid, lang, variant)."""
    async with store.session() as s:
        answers = (await s.execute(select(OpenResult).where(col(OpenResult.split) == "test", col(OpenResult.lang) != "ja")
                                   .order_by(col(OpenResult.id)))).scalars().all()
    graded: list[GradedAnswer] = []
    verdicts: dict[tuple[int, int, str, str], str | None] = {}
    for a in answers:
        assert a.id is not None
        verdict: str | None = "CORRECT" if a.variant == "injected" else "INCORRECT"
        if a.variant == "injected" and not any(v is None for v in verdicts.values()):
            verdict = None  # undecided: no strict majority
        verdicts[(a.job_id, int(a.open_qid), a.lang, a.variant)] = verdict
        graded.append(GradedAnswer(open_result_id=a.id, votes=(), jury=Judgement(
            judge=JURY, verdict=verdict, prompt_version="open_judge.v1", cost_usd=0.001)))
    async with store.transaction() as s:
        await write_judgements(s, graded, panel="p1")
    return verdicts


def _learn_counts(rows: list[OpenResultRow], right: dict[tuple[int, int, str, str], bool]) -> tuple[int, int, int]:
    """Learn's (n, base right, injected right) from the stored answers: the train-language questions answered both
    ways, pooled over the jobs, `right` the verdict of each answer that counts."""
    n = base = injected = 0
    for r in rows:
        key = (r.job_id, r.open_qid, r.lang)
        if r.split != "test" or r.lang != r.train_lang or r.variant != "injected":
            continue
        if (*key, "base") in right and (*key, "injected") in right:
            n += 1
            base += right[(*key, "base")]
            injected += right[(*key, "injected")]
    return n, base, injected


async def test_the_open_track_is_its_own_rows_by_layer_and_leaves_the_mcq_rows_as_they_were(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    q = LeaderboardQuery(spec=settings.spec.name, languages=tuple(settings.spec.languages), samples=SAMPLES, min_questions=1)
    before = await load_leaderboard(store, q)
    assert before.rows and before.open_rows == [] and "open_rows" not in json.loads(before.model_dump_json())
    await store_open_answers(store, sid)
    normaliser_only = await load_leaderboard(store, q)
    assert normaliser_only.rows == before.rows  # the MCQ rows: not one figure moved by the open answers
    assert [(r.scorer, r.target) for r in normaliser_only.open_rows] == [(OPEN_SCORER, TARGET)]
    async with store.session() as s:
        unjudged = await window_fingerprint(s)
    jury = await _jury_grades(store)
    async with store.session() as s:
        assert await window_fingerprint(s) != unjudged  # a kept board is computed again once the jury has graded
    board = await load_leaderboard(store, q)
    assert board.rows == before.rows and {r.scorer for r in board.rows} == {"option-loglik"}
    rows = {r.scorer: r for r in board.open_rows}
    assert set(rows) == {OPEN_SCORER, JURY_SCORER}
    async with store.session() as s:
        stored = await open_results_for_snapshot(s, sid)

    # the normaliser's row: Learn counted from the stored verdicts, Overall the report's own figure
    norm = rows[OPEN_SCORER]
    n, base, injected = _learn_counts(stored, {(r.job_id, r.open_qid, r.lang, r.variant): r.correct for r in stored})
    assert n > 0 and (norm.learn.n, norm.learn.injected.n) == (n, n)
    assert norm.learn.injected.value == pytest.approx(injected / n) and norm.learn.base == pytest.approx(base / n)
    assert norm.learn.injected.ci is not None and norm.learn.injected.ci[0] <= injected / n <= norm.learn.injected.ci[1]
    track = open_track(stored, languages=settings.spec.languages, snapshot_id=sid, samples=0)
    assert track is not None
    cell = next(c for c in track.table2 if c.domain == ALL_DOMAINS)
    assert norm.metric("overall").value == pytest.approx(cell.metric("overall").mean)
    assert norm.metric("overall").n > 0 and norm.metric("overall").ci is not None
    # the questions counted by snapshot: public open qids are 52 bits wide (a key of 40 lost them: "no results")
    assert norm.questions == len({r.open_qid for r in stored if r.split == "test"}) > 0
    assert norm.snapshots == 1 and [(c.status, c.questions) for c in norm.per_snapshot] == [("ok", norm.questions)]

    # the jury's row: its verdicts, on the answers it graded only (ja pending), undecided not right
    jr = rows[JURY_SCORER]
    n, base, injected = _learn_counts(stored, {k: v == "CORRECT" for k, v in jury.items()})
    assert (jr.learn.n, jr.learn.base) == (n, 0.0) and jr.learn.injected.value == pytest.approx((n - 1) / n)
    assert "ja" not in {p.test_lang for p in jr.pairs} and "ja" in {p.test_lang for p in norm.pairs}
    assert jr.metric("overall").value != norm.metric("overall").value

    # one layer asked for: only its rows, the MCQ board empty
    only = await load_leaderboard(store, LeaderboardQuery(spec=settings.spec.name, samples=0, scorer=JURY_SCORER))
    assert only.rows == [] and [r.scorer for r in only.open_rows] == [JURY_SCORER]
    assert only.open_rows[0].learn.n == jr.learn.n


async def test_the_command_prints_the_open_section_apart_and_the_csv_names_the_format(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None, store_url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}")
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    cfg = str(tmp_path / "clkt.toml")
    ran = clkt("leaderboard", "--config", cfg, "--no-cache", columns=400)
    assert ran.returncode == 0, ran.stderr
    mcq, _, opened = ran.stdout.partition(OPEN_TITLE)
    assert "option-loglik" in mcq and OPEN_SCORER not in mcq  # the MCQ tables hold no open row
    assert f"cpt-lora, {OPEN_SCORER} (normaliser layer)" in opened and "option-loglik" not in opened
    assert "too few" in opened  # fewer than 50 questions: shown, never ranked, as an MCQ row would be
    assert "no results" not in opened
    ran = clkt("leaderboard", "--config", cfg, "--csv")
    assert ran.returncode == 0, ran.stderr
    table = list(csv.DictReader(ran.stdout.splitlines()))
    assert [(r["scorer"], r["format"]) for r in table] == [("option-loglik", "mcq"), (OPEN_SCORER, "open")]
    ran = clkt("leaderboard", "--config", cfg, "--json")
    board = Leaderboard.model_validate_json(ran.stdout)
    assert [r.scorer for r in board.rows] == ["option-loglik"] and [r.scorer for r in board.open_rows] == [OPEN_SCORER]
    assert float(table[1]["learn_n"]) == board.open_rows[0].learn.n > 0


async def test_the_page_shows_the_open_section_after_the_mcq_tables(store: Store, tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from clkt.services import page_context
    from clkt.web import pages_app

    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    await _ready(store, sid)
    await store_open_answers(store, sid)
    async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        r = await client.get("/leaderboard")
        html = await r.text()
    assert r.status == 200
    mcq, _, opened = html.partition(f'<h2 id="open">{OPEN_TITLE}</h2>')
    assert opened and "cpt-lora, option-loglik" in mcq and OPEN_SCORER not in mcq.split('id="board"')[1]
    assert f"cpt-lora, {OPEN_SCORER}</h3>" in opened and "option-loglik</h3>" not in opened
    assert "too few" in opened and f"{TARGET} · cpt-lora · {OPEN_SCORER}" in opened  # its row and its heatmap
