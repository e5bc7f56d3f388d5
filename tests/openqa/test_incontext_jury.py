"""The jury grades the in-context track's short answers too (`clkt.openqa.jury_stage`, source `in-context`), over
the same three fake OpenAI-compatible judges as the parametric track's tests (`tests.openqa._jury`) and a real SQLite
store: each answered row gets three votes and the jury's row in `incontext_open_judgement` (a skipped prompt none, an
empty answer NOT_ATTEMPTED at no cost), its cost recorded; a second pass grades nothing and asks nobody; two judges
failing leave the answer without a verdict (pending in the report, never filled in by the normaliser's) and a later
pass grades it, the other judge's call replayed from the cache; a spent budget pauses the in-context pass as the
parametric one; the report shows the jury's figure beside the normaliser's per cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from clkt.context import ServiceContext
from clkt.report.incontext_open import incontext_open_lines, incontext_open_results
from clkt.report.writer import load_report_data
from storage.engine import Store
from storage.incontext_open import InContextOpenRecord, add_incontext_open, incontext_open_answers
from storage.incontext_open_judgements import incontext_jury_rows
from tests.fakes.openai_server import FakeOpenAI
from tests.inject._fixtures import SNAPSHOT_ID, public_entity_id, seed_store, write_tiny_snapshot
from tests.inject._open_fixtures import add_open_track, open_qid
from tests.openqa._jury import JUDGES, stage

# the tiny snapshot's two open test questions (entity, fact, gold)
QUESTIONS = [(1, "film.director", "Paris"), (2, "match.venue", "Rome")]
CONTEXTS = ("", "en", "fr")
SPOKEN = len(QUESTIONS) * 2 * len(CONTEXTS)  # target t: every question x en/fr x (floor, en, fr document), answered


def _answer(gold: str, c: str, lang: str) -> tuple[str, str]:
    """A distinct answer per row (so each is one judge prompt): right with a document, wrong on the floor."""
    return (f"{gold}, with the {c} document ({lang})", "CORRECT") if c else (f"Lyon, I guess ({lang})", "INCORRECT")


def _records() -> list[InContextOpenRecord]:
    out = []
    for e, fact, gold in QUESTIONS:
        for lang in ("en", "fr"):
            for c in CONTEXTS:
                text_, verdict = _answer(gold, c, lang)
                out.append(InContextOpenRecord(snapshot_id=SNAPSHOT_ID, target="t", open_qid=open_qid(e, fact),
                                               entity_id=public_entity_id(e), context_lang=c, lang=lang, status="answered",
                                               verdict=verdict, answer=text_, answer_lang=lang, prompt_version="p1"))
    q, e = open_qid(1, "film.director"), public_entity_id(1)
    out += [  # target u: a prompt that could not fit (no answer: never graded) and an empty answer (no judge asked)
        InContextOpenRecord(snapshot_id=SNAPSHOT_ID, target="u", open_qid=q, entity_id=e, context_lang="en", lang="en",
                            status="skipped", verdict=""),
        InContextOpenRecord(snapshot_id=SNAPSHOT_ID, target="u", open_qid=q, entity_id=e, context_lang="", lang="en",
                            status="answered", verdict="NOT_ATTEMPTED", answer=""),
    ]
    return out


@pytest.fixture
async def answers(store: Store, tmp_path: Path) -> list[InContextOpenRecord]:
    await seed_store(store, add_open_track(write_tiny_snapshot(tmp_path / "snapshot")))
    recs = _records()
    async with store.transaction() as s:
        assert await add_incontext_open(s, recs) == len(recs)
    return recs


async def _rows_per_answer(store: Store) -> dict[tuple[str, int, str, str], int]:
    async with store.session() as s:
        got = (await s.execute(text("SELECT target, open_qid, context_lang, lang, count(*) FROM incontext_open_judgement "
                                    "GROUP BY target, open_qid, context_lang, lang"))).all()
    return {(t, int(q), c, lang): int(n) for t, q, c, lang, n in got}


async def test_the_in_context_answers_are_graded_once_with_three_votes_and_their_cost(
    store: Store, answers: list[InContextOpenRecord], servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    done = await stage(servers).run_once(ctx)
    assert done.by_track == {"in-context": SPOKEN + 1} and done.graded == SPOKEN + 1 and done.skipped == 0
    assert done.touched == {SNAPSHOT_ID} and done.completed == [SNAPSHOT_ID] and done.budget_spent is None
    per = await _rows_per_answer(store)
    assert per == {(r.target, r.open_qid, r.context_lang, r.lang): 4 if r.answer else 1  # 3 votes + the jury's
                   for r in answers if r.status == "answered"}  # the skipped prompt: no row
    assert [s.stats.ok for s in servers] == [SPOKEN] * 3  # one call per judge and spoken answer
    async with store.session() as s:
        jury = await incontext_jury_rows(s, SNAPSHOT_ID)
        spent = (await s.execute(text("SELECT count(*), sum(cost_usd) FROM llm_call WHERE stage = 'open_judge'"))).one()
        vote_cost = (await s.execute(text("SELECT sum(cost_usd) FROM incontext_open_judgement WHERE judge != '*jury*'"))).scalar()
        assert (await s.execute(text("SELECT count(*) FROM open_judgement"))).scalar() == 0  # never the parametric table
    normaliser = {(r.target, r.open_qid, r.context_lang, r.lang): r.verdict for r in answers}
    for j in jury:  # the fake judge: CORRECT where the answer holds the gold, as the normaliser graded them
        assert j.verdict == normaliser[(j.target, j.open_qid, j.context_lang, j.lang)] and j.decided and not j.failed
        assert j.prompt_version == "open_judge.v1" and (j.cost_usd > 0) == (j.target == "t")
    assert spent[0] == 3 * SPOKEN and spent[1] > 0  # each call paid once, recorded once
    assert sum(j.cost_usd for j in jury) == pytest.approx(vote_cost) == pytest.approx(spent[1])
    calls = [s.stats.calls for s in servers]
    again = await stage(servers).run_once(ctx)  # a restart: a new stage, the same store
    assert again.graded == 0 and not again.by_track and [s.stats.calls for s in servers] == calls


async def test_two_failing_judges_leave_the_answer_pending_then_a_later_pass_grades_it(
    store: Store, answers: list[InContextOpenRecord], servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    servers[1].script = [{"status": 500}] * SPOKEN  # no verdict: an HTTP error (the provider tries once)
    servers[2].script = [{"status": 500}] * SPOKEN
    jury = stage(servers, max_attempts=3, retry_after_s=0)
    first = await jury.run_once(ctx)
    assert first.graded == SPOKEN + 1 and first.completed == []  # the failed ones are left to retry
    async with store.session() as s:
        rows = await incontext_jury_rows(s, SNAPSHOT_ID)
        failed = (await s.execute(text("SELECT error FROM incontext_open_judgement WHERE judge = :j"),
                                  {"j": JUDGES[1]})).scalars().all()
    spoken = [j for j in rows if j.target == "t"]
    assert len(spoken) == SPOKEN and all(j.verdict is None and j.failed and not j.decided for j in spoken)
    assert len(failed) == SPOKEN and all(e is not None and e.startswith(("http", "timeout")) for e in failed)
    [t, _] = incontext_open_results(answers, languages=["en", "fr"], snapshot_id=SNAPSHOT_ID, jury=rows)
    for c in t.cells:  # never counted wrong, never filled in by the normaliser: pending
        assert c.jury is not None and (c.jury.n, c.jury.pending, c.jury.accuracy) == (0, c.n, None)
    asked_a = servers[0].stats.calls
    second = await jury.run_once(ctx)
    assert second.graded == SPOKEN and second.completed == [SNAPSHOT_ID]  # the empty answer is not graded again
    assert servers[0].stats.calls == asked_a  # judge a's votes replayed from the call cache
    async with store.session() as s:
        rows = await incontext_jury_rows(s, SNAPSHOT_ID)
        attempts = (await s.execute(text("SELECT DISTINCT attempts FROM incontext_open_judgement WHERE target = 't'"))).scalars().all()
    assert all(j.decided and not j.failed for j in rows) and attempts == [2]
    assert {j.verdict for j in rows if j.target == "t"} == {"CORRECT", "INCORRECT"}
    assert (await jury.run_once(ctx)).graded == 0


async def test_a_spent_budget_pauses_the_in_context_pass_with_no_half_answer(
    store: Store, answers: list[InContextOpenRecord], servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    jury = stage(servers, budget=0.005, concurrency=1)  # a few answers' worth of calls
    done = await jury.run_once(ctx)
    per = await _rows_per_answer(store)
    assert done.budget_spent is not None and jury.paused_until is not None and 0 < done.graded < SPOKEN
    assert len(per) == done.graded and set(per.values()) <= {1, 4}  # every answer whole or absent
    calls = [s.stats.calls for s in servers]
    assert (await jury.run_once(ctx)).graded == 0 and [s.stats.calls for s in servers] == calls  # paused


async def test_the_report_shows_the_jury_beside_the_normaliser_per_cell(
    store: Store, answers: list[InContextOpenRecord], servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    await stage(servers).run_once(ctx)
    data = await load_report_data(store, SNAPSHOT_ID)
    t = next(t for t in data.incontext_open if t.target == "t")
    assert t.jury_prompt_versions == ["open_judge.v1"] and t.jury_cost_usd > 0
    for c in t.cells:  # 2 answers of 2 entities a cell: too few, as the normaliser's cell
        assert c.jury is not None and (c.jury.n, c.jury.entities, c.jury.pending) == (c.n, c.entities, 0)
        assert c.jury.too_few == c.too_few is True and c.jury.correct == c.correct
    md = "\n".join(incontext_open_lines(data.incontext_open))
    assert "jury right % [95% CI] (n)" in md and f"{SPOKEN} graded (0 undecided: not right), 0 not yet" in md
    assert "| en | fr | 2 | 2 | too few | 0 | 0 | too few (n 2) |" in md
    async with store.session() as s:
        assert len(await incontext_open_answers(s, SNAPSHOT_ID)) == len(answers)
