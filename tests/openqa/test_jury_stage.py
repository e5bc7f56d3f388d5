"""The open track's jury as a daemon stage (`clkt.openqa.jury_stage`, issue 47 item 3), over three real local
OpenAI-compatible servers (`tests.fakes.openai_server`), one per judge, each judge of another family: the stored
open answers of a seeded snapshot's finished jobs (`tests.publish`) graded, three votes and the jury's row per
answer; a second pass grades nothing; a kill before the write re-grades from the call cache at no cost; a judge that
gives malformed output, no verdict or times out is stored as failed and never guessed, and retried up to the bound;
a spent budget writes no half answer and pauses the stage; the report shows the jury's figure apart; the locality and
control splits' answers are graded like the test split's (the jury's kept % of them in the report)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import col, select

from clkt.config import DaemonSettings, GpuSettings
from clkt.context import ServiceContext
from clkt.openqa.jury_stage import JuryStage
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_track import open_track
from clkt.snapshots.layout import OpenRow
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs
from storage.models import GpuJob, LeaseStatus
from storage.open_judgements import judgements_for, jury_rows_for_snapshot
from storage.open_results import OpenResultRecord, open_results_for_snapshot, write_open_results
from tests.fakes.openai_server import FakeOpenAI
from tests.inject._fixtures import SNAPSHOT_ID, add_locality_split, public_entity_id, seed_store, write_tiny_snapshot
from tests.inject._open_fixtures import CONTROL_ENTITY, add_open_track, open_qid
from tests.openqa._jury import JUDGES, agents, stage
from tests.publish._open import store_open_answers
from tests.publish.conftest import seed_open_snapshot
from tests.snapshots.factories import make_settings


@pytest.fixture
async def seeded(store: Store, tmp_path: Path) -> str:
    sid = await seed_open_snapshot(store, make_settings(tmp_path), month=5, prefix="a")
    await store_open_answers(store, sid)
    return sid


async def _rows_per_answer(store: Store) -> Counter[int]:
    async with store.session() as s:
        got = (await s.execute(text("SELECT open_result_id, count(*) FROM open_judgement GROUP BY open_result_id"))).all()
    return Counter({int(i): int(n) for i, n in got})


async def _answers(store: Store, sid: str) -> dict[int, str]:
    async with store.session() as s:
        ids = (await s.execute(text("SELECT id, answer FROM open_result ORDER BY id"))).all()
    return {int(i): a for i, a in ids}


async def _distinct_asked(store: Store, ids: set[int]) -> int:
    """How many distinct judge prompts the answers `ids` make (the same question, language and answer in two jobs is
    one prompt: the second is read from the call cache)."""
    async with store.session() as s:
        rows = (await s.execute(text("SELECT id, open_qid, lang, answer FROM open_result"))).all()
    return len({(q, lang, a) for i, q, lang, a in rows if i in ids})


async def _control_answers(store: Store) -> set[int]:
    async with store.session() as s:
        return {int(i) for (i,) in (await s.execute(text("SELECT id FROM open_result WHERE split = 'control'"))).all()}


async def test_a_full_pass_stores_three_votes_and_the_jury_per_answer(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    jury = stage(servers)
    done = await jury.run_once(ctx)
    answers = await _answers(store, seeded)
    spoken = {i for i, a in answers.items() if a.strip()}
    unfound = await _control_answers(store)  # `store_open_answers`' control answers ask a qid the snapshot lacks
    assert done.graded == len(answers) > len(spoken) > 0 and done.budget_spent is None and done.skipped == len(unfound)
    per = await _rows_per_answer(store)
    assert {i: per[i] for i in answers} == {i: 4 if i in spoken - unfound else 1 for i in answers}  # 3 votes + jury
    asked = await _distinct_asked(store, spoken - unfound)
    assert [s.stats.ok for s in servers] == [asked] * 3  # one call per judge and distinct answer (the rest: cached)
    async with store.session() as s:
        got = await judgements_for(s, list(answers))
    for i, j in got.items():
        assert j.jury is not None and j.jury.prompt_version == "open_judge.v1" and j.jury.attempts == 1
        if i in unfound:
            assert j.jury.verdict is None and j.jury.error is not None and "not found" in j.jury.error and not j.votes
        elif i in spoken:
            assert set(j.votes) == set(JUDGES) and all(v.error is None and v.cost_usd > 0 for v in j.votes.values())
            assert j.jury.verdict in ("CORRECT", "INCORRECT") and j.jury.reason == "3 of 3 judges"
            assert j.jury.cost_usd == pytest.approx(sum(v.cost_usd for v in j.votes.values()))
        else:
            assert j.votes == {} and j.jury.verdict == "NOT_ATTEMPTED" and j.jury.cost_usd == 0.0


async def test_a_second_pass_grades_nothing_and_a_kill_before_the_write_costs_nothing(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    first = await stage(servers, max_attempts=1).run_once(ctx)
    calls = [s.stats.calls for s in servers]
    again = await stage(servers, max_attempts=1).run_once(ctx)  # a restart: a new stage, the same store
    assert again.graded == 0 and [s.stats.calls for s in servers] == calls
    async with store.transaction() as s:  # the process died after the judges answered, before the write
        await s.execute(text("DELETE FROM open_judgement"))
    regraded = await stage(servers, max_attempts=1).run_once(ctx)
    assert regraded.graded == first.graded and regraded.verdicts == first.verdicts
    assert [s.stats.calls for s in servers] == calls  # every vote replayed from the call cache
    async with store.session() as s:
        spent = (await s.execute(text("SELECT count(*), sum(cost_usd) FROM llm_call WHERE stage = 'open_judge'"))).one()
    assert spent[0] == sum(calls) and spent[1] > 0  # each call paid once, recorded once


async def test_malformed_output_is_a_failed_vote_never_a_guess_and_retried_up_to_the_bound(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    servers[2].script = [{"text": "Probably right, I would say."}] * 1000  # judge c never gives a verdict
    jury = stage(servers, max_attempts=2, output_retries=1)
    first = await jury.run_once(ctx)
    answers = await _answers(store, seeded)
    spoken = [i for i, a in answers.items() if a.strip() and i not in await _control_answers(store)]
    async with store.session() as s:
        got = await judgements_for(s, spoken)
    for j in got.values():
        c = j.votes[JUDGES[2]]
        assert c.verdict is None and c.error is not None and c.error.startswith("malformed")
        assert j.jury is not None and j.jury.verdict in ("CORRECT", "INCORRECT")  # the two others agree
        assert j.jury.error == "1 of 3 votes failed" and j.jury.reason == "2 of 3 judges"
    assert first.completed == []  # answers with a failed vote are left to retry
    calls = servers[2].stats.calls
    # each prompt asked, then asked again once (output_retries); a malformed reply is never replayed, so an answer
    # that repeats another's prompt is asked again unless it read the reply before the other's vote failed
    distinct = await _distinct_asked(store, set(spoken))
    assert 2 * distinct <= calls <= 2 * len(spoken) and distinct < len(spoken)
    assert (await jury.run_once(ctx)).graded == 0  # a failed vote waits retry_after_s (900 s) before another try
    jury = stage(servers, max_attempts=2, output_retries=1, retry_after_s=0)
    second = await jury.run_once(ctx)
    unfound = len(await _control_answers(store))
    # the retry reaches judge c again (its malformed replies were retired from the cache, never replayed)
    assert second.graded == len(spoken) + unfound and 2 * distinct <= servers[2].stats.calls - calls <= 2 * len(spoken)
    async with store.session() as s:
        assert {j.jury.attempts for j in (await judgements_for(s, spoken)).values() if j.jury} == {2}
    third = await jury.run_once(ctx)
    assert third.graded == 0  # max_attempts reached: the failure stays stored, counted
    assert jury.build_jury(ctx).stats.failed["malformed"] == len(spoken)  # counted per answer, each pass (one here)


async def test_two_failed_judges_leave_the_answer_undecided(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    servers[1].script = [{"status": 500}] * 1000  # no verdict: an HTTP error after the provider's tries
    servers[2].script = [{"text": "no idea"}] * 1000
    await stage(servers, max_attempts=1, output_retries=0).run_once(ctx)
    answers = await _answers(store, seeded)
    unfound = await _control_answers(store)
    async with store.session() as s:
        got = await judgements_for(s, [i for i, a in answers.items() if a.strip() and i not in unfound])
    assert got and all(j.jury is not None and j.jury.verdict is None and "no majority" in j.jury.reason
                       for j in got.values())
    b = Counter((j.votes[JUDGES[1]].error or "").split(":")[0] for j in got.values())
    c = Counter((j.votes[JUDGES[2]].error or "").split(":")[0] for j in got.values())
    assert c == Counter({"malformed": len(got)}) and b["http"] >= len(got) - 2  # (a loaded machine may time one out)
    assert all(j.votes[JUDGES[1]].verdict is None for j in got.values())


async def test_a_judge_that_times_out_is_stored_failed_then_graded_on_a_later_pass(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    answers = await _answers(store, seeded)
    spoken = [i for i, a in answers.items() if a.strip() and i not in await _control_answers(store)]
    servers[0].script = [{"delay_s": 3.0}] * len(spoken)  # every first call of judge a outlives its timeout
    jury = stage(servers, timeouts=(0.5, 30.0, 30.0), concurrency=16, retry_after_s=0)
    first = await jury.run_once(ctx)
    async with store.session() as s:
        got = await judgements_for(s, spoken)
    assert all(j.votes[JUDGES[0]].error and j.votes[JUDGES[0]].error.startswith("timeout") for j in got.values())
    assert first.graded == len(answers) and jury.build_jury(ctx).stats.failed["timeout"] == len(spoken)
    second = await jury.run_once(ctx)  # the server answers now: the failed votes become verdicts
    assert second.graded == len(spoken) + len(await _control_answers(store))
    async with store.session() as s:
        got = await judgements_for(s, spoken)
    assert all(j.jury is not None and j.jury.error is None and j.votes[JUDGES[0]].verdict for j in got.values())
    assert servers[1].stats.calls == await _distinct_asked(store, set(spoken))  # the others replayed from the cache


async def test_a_spent_budget_writes_no_half_answer_and_pauses(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    jury = stage(servers, budget=0.01, concurrency=2)  # a few answers' worth of calls (~$0.0007 a call)
    done = await jury.run_once(ctx)
    answers = await _answers(store, seeded)
    per = await _rows_per_answer(store)
    assert done.budget_spent is not None and "budget" in done.budget_spent and jury.paused_until is not None
    assert 0 < done.graded < len(answers) and sum(1 for i in answers if per[i]) == done.graded
    assert all(per[i] == (4 if answers[i].strip() else 1) for i in answers if per[i])  # every answer whole or absent
    calls = [s.stats.calls for s in servers]
    assert (await jury.run_once(ctx)).graded == 0 and [s.stats.calls for s in servers] == calls  # paused


async def test_the_report_shows_the_jury_apart_with_n_and_ci(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext, tmp_path: Path,
) -> None:
    from clkt.report.writer import load_report_data, write_report

    await stage(servers).run_once(ctx)
    data = await load_report_data(store, seeded)
    track = data.open_track
    assert track is not None and track.jury is not None and track.scorers == ["open-normaliser"]
    jury = track.jury
    assert jury.scorer == "open-jury" and jury.pending == 0 and jury.cost_usd > 0
    assert jury.graded == sum(c.n for c in jury.cells) > 0 and jury.prompt_versions == ["open_judge.v1"]
    for c in jury.cells:
        assert c.ci is not None and c.ci[0] <= c.accuracy <= c.ci[1] and c.undecided == 0
        assert c.decided == c.n and 0 <= c.agree <= c.decided
    out = tmp_path / "report"
    await write_report(store, seeded, out)
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "The jury of LLM judges (open-jury layer, apart from the normaliser)" in md
    assert f"{jury.graded} test answers graded, 0 not yet" in md
    c = jury.cells[0]
    assert f"| {c.lang} | {c.n} | {100 * c.accuracy:.1f} [" in md


async def test_the_daemon_rewrites_the_report_once_every_answer_is_graded(
    store: Store, seeded: str, servers: list[FakeOpenAI], ctx: ServiceContext, tmp_path: Path,
) -> None:
    from clkt.report.writer import report_dir
    from clkt.services import jury_report_hook

    settings = make_settings(tmp_path / "cfg")
    jury = JuryStage(agents=agents(servers, max_attempts=1), daemon=DaemonSettings(), secret=lambda _env: None,
                     burst=True, on_graded=jury_report_hook(settings))
    await jury.run(ctx)  # burst: one pass
    assert jury.last_pass is not None and jury.last_pass.completed == [seeded]
    md = (report_dir(settings.data_dir, seeded) / "report.md").read_text(encoding="utf-8")
    assert "open-jury layer" in md and "0 not yet" in md


async def test_the_locality_and_control_splits_answers_are_graded_like_the_others(
    store: Store, tmp_path: Path, servers: list[FakeOpenAI], ctx: ServiceContext,
) -> None:
    """The jury grades a job's locality-split and control-split answers (their questions read from the snapshot's
    `locality/open/` and control files), and the report's jury section shows its kept % of them, apart."""
    local = [OpenRow(qid=open_qid(7, "film.director"), entity_id=public_entity_id(7), domain="movies", source="fixture",
                     lang=lang, split="test", fact="film.director", kind="name", question=f"[{lang}] Who directed it?",
                     answer="Ada Voss") for lang in ("en", "fr")]
    tiny = add_open_track(write_tiny_snapshot(tmp_path / "snapshot"))
    snapshot = add_locality_split(tiny, known_by={"tiny": [7], "other": [8]}, open_rows=local)
    await seed_store(store, snapshot)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["tiny"], strategies=["cpt-lora"], train_langs=["en"],
                               config=GpuSettings(), max_attempts=1)
    async with store.transaction() as s:
        job = (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == SNAPSHOT_ID))).scalar_one()
        job.status = LeaseStatus.done
        assert job.id is not None
        asked = [(open_qid(7, "film.director"), public_entity_id(7), "locality", "Ada Voss"),
                 (open_qid(None, "film.director"), CONTROL_ENTITY, "control", "Nobody")]
        await write_open_results(s, job.id, [
            OpenResultRecord(open_qid=q, entity_id=e, domain="movies", fact="film.director", lang=lang, variant=v,
                             scorer="open-normaliser", split=split, verdict="CORRECT" if v == "base" else "INCORRECT",
                             other_language=False, answer=f"{answer} ({lang}, {v})")
            for q, e, split, answer in asked for lang in ("en", "fr") for v in ("base", "injected")], entity_rows={})
    done = await stage(servers).run_once(ctx)
    assert done.graded == 8 and done.skipped == 0  # every answer's question was found: none graded against nothing
    async with store.session() as s:
        jury = await jury_rows_for_snapshot(s, SNAPSHOT_ID)
        rows = await open_results_for_snapshot(s, SNAPSHOT_ID)
    assert len(jury) == 8 and all(j.verdict in ("CORRECT", "INCORRECT") and not j.failed for j in jury)
    assert [s.stats.ok for s in servers] == [8] * 3  # each judge asked about each answer
    track = open_track(rows, languages=["en", "fr"], snapshot_id=SNAPSHOT_ID, jury=jury, samples=200)
    assert track is not None and track.jury is not None
    verdict = {(j.open_qid, j.lang, j.variant): j.verdict for j in jury}
    kept = {k.lang: k for k in track.jury.locality}
    for lang in ("en", "fr"):  # one entity: too few, its counts the jury's
        before = verdict[(open_qid(7, "film.director"), lang, "base")] == "CORRECT"
        after = verdict[(open_qid(7, "film.director"), lang, "injected")] == "CORRECT"
        assert kept[lang].scorer == JURY_SCORER and kept[lang].too_few
        assert (kept[lang].n, kept[lang].kept, kept[lang].lost) == (1, int(before and after), int(before and not after))
