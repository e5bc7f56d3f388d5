"""The four stages end to end on a real SQLite store with the pydantic-ai backend (FunctionModel)."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from sqlalchemy import func, select, update

from agents.llm import LlmBackend
from clkt.config import Settings
from storage.engine import Store
from storage.llm_cache import SqlCallCache, cost_summary
from storage.models import (
    Document,
    EntityStatus,
    LeaseStatus,
    LlmCall,
    Probe,
    Question,
    QuestionStatus,
    Task,
    Translation,
    Verification,
)
from tests.conftest import wait_for
from tests.documents.samples import FIGHT_CLUB, LIVERPOOL_SWANSEA, NORTHRIDGE
from tests.fakes.function_llm import ScriptedLlm
from tests.pipeline._harness import add_entity, answers, pipeline_settings, running, settle

LLM_AGENTS = {
    "backend": "llm", "judge_model": "fake:judge", "generator_model": "fake:gen", "verifier_model": "fake:ver",
    "translator_model": "fake:tr", "providers": {"fake": {"base_url": "http://127.0.0.1:9/v1", "rpm": 60000}},
    "prices": {"fake:gen": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}},
}
ROLES = ("judge", "generate", "verify", "translate")


def llm_backend(settings: Settings, store: Store, llm: ScriptedLlm | FunctionModel) -> LlmBackend:
    model = llm.model() if isinstance(llm, ScriptedLlm) else llm
    return LlmBackend(agents=settings.agents, languages=settings.spec.languages, cache=SqlCallCache(store),
                      raw_models={r: model for r in ROLES})


async def count(store: Store, table: type, *where: object) -> int:
    async with store.session() as s:
        return int((await s.execute(select(func.count()).select_from(table).where(*where))).scalar() or 0)


async def seed(store: Store) -> list[int]:
    return [
        await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1"),
        await add_entity(store, FIGHT_CLUB, "Fight Club", domain="movies", external_id="f1"),
        await add_entity(store, NORTHRIDGE, "M 6.7 - Northridge", domain="disasters", external_id="q1"),
    ]


async def test_entities_become_ready_with_questions_in_every_language(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents=LLM_AGENTS)
    ids = await seed(store)
    llm = ScriptedLlm()
    probe = answers()
    async with running(settings, store, llm_backend(settings, store, llm), probe):
        final = await settle(store, len(ids))
    assert set(final.values()) == {EntityStatus.ready}, final
    # every target x language was probed once, in one batch per target
    assert await count(store, Probe) == len(ids) * 2 * 3
    assert len(probe.calls) == len(ids) * 2
    translated = await count(store, Question, Question.status == QuestionStatus.translated)
    assert translated >= len(ids)
    assert await count(store, Translation) == translated * 3
    assert await count(store, Translation, Translation.translator == "source", Translation.lang == "en") == translated
    assert await count(store, Document) == len(ids) * 3
    assert await count(store, Document, Document.origin == "translation") == len(ids) * 2
    assert await count(store, Verification, Verification.passed.is_(True)) >= translated
    async with store.session() as s:
        en = (await s.execute(select(Translation, Question).join(Question, Question.id == Translation.question_id)
                              .where(Translation.lang == "en"))).all()
        for tr, q in en:
            assert tr.question == q.question and tr.options == q.options
        summary = await cost_summary(s)
    assert summary.accepted_questions == translated
    assert summary.cost_per_accepted_question_usd is not None and summary.cost_per_accepted_question_usd > 0
    assert {st.stage for st in summary.stages} == {"judge", "generate", "verify", "translate"}
    assert summary.calls == sum(llm.calls.values())


async def test_known_entities_are_dropped(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents=LLM_AGENTS)
    ids = await seed(store)
    known = {"known": True, "matched_facts": ["Liverpool 4–1 Swansea"], "reason": "states the final score"}
    llm = ScriptedLlm({"judge": [known]})  # the very first judged answer is "known"
    async with running(settings, store, llm_backend(settings, store, llm), answers()) as _:
        final = await settle(store, len(ids))
    assert sorted(final.values()).count(EntityStatus.known) == 1
    assert sorted(final.values()).count(EntityStatus.ready) == 2
    known_id = next(i for i, st in final.items() if st is EntityStatus.known)
    # probing stopped at the first hit: one probe row for that entity
    assert await count(store, Probe, Probe.entity_id == known_id) == 1
    assert await count(store, Question, Question.entity_id == known_id) == 0


async def test_failed_verification_and_translation_drop_with_reasons(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents={**LLM_AGENTS, "output_retries": 0})
    await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    fail = {"grounded": True, "specific": False, "verifiable": True, "answer_correct": True,
            "distractors_plausible_wrong": True, "reasons": {"specific": "too general"}}
    english = {"lang": "ja", "question": "Which value fills the blank in the match report of the game?",
               "options": ["1", "2", "3", "4"], "answer_index": 0}
    llm = ScriptedLlm({"verify": [fail], "translate_mcq": [english]})
    async with running(settings, store, llm_backend(settings, store, llm), answers()) as _:
        final = await settle(store, 1)
    assert list(final.values()) == [EntityStatus.ready]
    async with store.session() as s:
        qs = (await s.execute(select(Question))).scalars().all()
    by_status = {q.status: q for q in qs}
    assert QuestionStatus.rejected in by_status and "specific" in (by_status[QuestionStatus.rejected].status_reason or "")
    assert QuestionStatus.dropped in by_status
    assert "translation to" in (by_status[QuestionStatus.dropped].status_reason or "")
    assert QuestionStatus.translated in by_status
    dropped = by_status[QuestionStatus.dropped]
    assert await count(store, Translation, Translation.question_id == dropped.id) == 0


async def test_no_surviving_question_rejects_the_entity(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents=LLM_AGENTS)
    await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    fail = {"grounded": False, "specific": True, "verifiable": True, "answer_correct": True,
            "distractors_plausible_wrong": True, "reasons": {"grounded": "not in the document"}}
    llm = ScriptedLlm({"verify": [fail] * 10})
    async with running(settings, store, llm_backend(settings, store, llm), answers()) as _:
        final = await settle(store, 1)
    assert list(final.values()) == [EntityStatus.rejected]


async def test_crash_mid_translation_resumes_without_repeating_a_call(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents=LLM_AGENTS)
    ids = await seed(store)
    scripted = ScriptedLlm()
    sent: list[str] = []
    state = {"translate": 0}

    def flaky(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        props = info.output_tools[0].parameters_json_schema["properties"]
        if "lang" in props:
            state["translate"] += 1
            if state["translate"] == 4:  # the process "dies" in the middle of translating
                raise RuntimeError("killed")
        sent.append(repr(messages[-1]))
        return scripted._fn(messages, info)

    backend = llm_backend(settings, store, FunctionModel(flaky, model_name="flaky"))
    async with running(settings, store, backend, answers()) as _:
        final = await settle(store, len(ids))
    assert set(final.values()) == {EntityStatus.ready}
    # the failed task was retried; every call that had succeeded before was answered from the cache
    assert await count(store, Task, Task.attempts > 1) >= 1
    assert await count(store, LlmCall) == len(sent)
    assert backend.factory.stats.hits >= 1
    assert await count(store, Task, Task.status != LeaseStatus.done) == 0


async def test_rerunning_finished_stages_writes_nothing_twice(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, agents=LLM_AGENTS)
    ids = await seed(store)
    llm = ScriptedLlm()
    backend = llm_backend(settings, store, llm)
    async with running(settings, store, backend, answers()) as _:
        await settle(store, len(ids))
    before = {t.__name__: await count(store, t) for t in (Probe, Question, Verification, Translation, Document, LlmCall)}
    calls = sum(llm.calls.values())
    async with store.transaction() as s:  # every task claimed again, as after lost leases
        await s.execute(update(Task).values(status=LeaseStatus.pending, lease_owner=None))
    async with running(settings, store, backend, answers()) as _:
        await wait_for(lambda: _all_done(store))
    after = {t.__name__: await count(store, t) for t in (Probe, Question, Verification, Translation, Document, LlmCall)}
    assert after == before
    assert sum(llm.calls.values()) == calls
    assert set((await settle(store, len(ids))).values()) == {EntityStatus.ready}


async def _all_done(store: Store) -> bool:
    return await count(store, Task, Task.status != LeaseStatus.done) == 0
