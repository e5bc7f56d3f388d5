"""The LLM call cache on the store (a re-run pays nothing), costs, the budget cap, start-up config errors."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.cache import Budget, CallCache, MemoryCallCache
from agents.llm import LlmBackend
from clkt.config import Settings, load_settings
from clkt.errors import BudgetExhausted, ConfigError, RetryLater
from clkt.pipeline._entities import next_month, paid
from clkt.services import build_services
from clkt.sources.board import SourceBoard
from storage.engine import Store
from storage.llm_cache import SqlCallCache, cost_summary
from tests.agents._util import LIVERPOOL_SWANSEA, check_config, llm_backend, llm_settings, match_doc, model_factory
from tests.fakes.function_llm import ScriptedLlm

ROLES = ("judge", "generate", "verify", "translate")


def backend(settings: Settings, cache: CallCache, llm: ScriptedLlm, **kw: Any) -> LlmBackend:
    model = llm.model()
    return llm_backend(settings, cache=cache, raw_models={r: model for r in ROLES}, **kw)


async def run_all(b: LlmBackend) -> None:
    doc = match_doc()
    mcqs = await b.generate(entity_name="Liverpool vs Swansea", document=doc, facts=LIVERPOOL_SWANSEA, n=2)
    for q in mcqs:
        await b.verify(document=doc, facts=LIVERPOOL_SWANSEA, mcq=q)
        await b.translate_mcq(mcq=q, document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr")
    await b.judge(entity_name="Liverpool vs Swansea", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")


async def test_second_run_and_restart_make_zero_calls(store: Store, db_url: str) -> None:
    settings = llm_settings(prices={"fake:gen": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}})
    first = ScriptedLlm()
    await run_all(backend(settings, SqlCallCache(store), first))
    n_first = sum(first.calls.values())
    assert n_first >= 4
    again = ScriptedLlm()
    await run_all(backend(settings, SqlCallCache(store), again))
    assert sum(again.calls.values()) == 0
    await store.close()
    async with Store(url=db_url) as reopened:  # a restart of the daemon
        restarted = ScriptedLlm()
        b = backend(settings, SqlCallCache(reopened), restarted)
        await run_all(b)
        assert sum(restarted.calls.values()) == 0
        assert b.factory.stats.hits == n_first and b.factory.stats.misses == 0
        async with reopened.session() as s:
            summary = await cost_summary(s)
    assert summary.calls == n_first
    by_stage = {st.stage: st for st in summary.stages}
    assert set(by_stage) == {"judge", "generate", "verify", "translate"}
    assert by_stage["generate"].cost_usd > 0 and by_stage["verify"].cost_usd == 0  # only the generator is priced
    assert summary.input_tokens > 0 and summary.accepted_questions == 0 and summary.cost_per_accepted_question_usd is None


async def test_a_changed_prompt_or_model_is_a_new_key() -> None:
    cache = MemoryCallCache()
    llm = ScriptedLlm()
    doc = match_doc()
    b1 = backend(llm_settings(), cache, llm)
    await b1.judge(entity_name="A", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    await b1.judge(entity_name="B", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    b2 = backend(llm_settings(judge_model="fake:judge-2"), cache, llm)
    await b2.judge(entity_name="A", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    assert llm.calls["judge"] == 3
    assert len(cache.calls) == 3



class _SlowLlm(ScriptedLlm):
    """The scripted answers, each after `delay_s` (so that two askers overlap); the first `fail` calls raise."""

    def __init__(self, *, delay_s: float, fail: int = 0) -> None:
        super().__init__()
        self.delay_s, self.fail = delay_s, fail

    def model(self, name: str = "slow") -> FunctionModel:
        async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            await asyncio.sleep(self.delay_s)
            if self.fail > 0:
                self.fail -= 1
                raise RuntimeError("provider down")
            return self._fn(messages, info)

        return FunctionModel(answer, model_name=name)


async def test_the_same_call_asked_at_once_is_paid_once(store: Store) -> None:
    # two entities with the same document ask the same translation; two stage tasks may ask it at the same moment
    llm = _SlowLlm(delay_s=0.05)
    b = backend(llm_settings(), SqlCallCache(store), llm)
    doc = match_doc()
    out = await asyncio.gather(*(
        b.translate_document(document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr") for _ in range(3)))
    assert llm.calls["translate_document"] == 1 and len({o.model_dump_json() for o in out}) == 1
    assert b.factory.stats.misses == 1 and b.factory.stats.hits == 2 and len(b.factory.in_flight) == 0


async def test_a_failed_call_lets_the_waiting_asker_try_itself() -> None:
    llm = _SlowLlm(delay_s=0.05, fail=1)
    b = backend(llm_settings(), MemoryCallCache(), llm)
    doc = match_doc()
    first, second = await asyncio.gather(
        b.translate_document(document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr"),
        b.translate_document(document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr"), return_exceptions=True)
    assert isinstance(first, Exception) and not isinstance(second, BaseException)
    assert b.factory.stats.misses == 1 and len(b.factory.in_flight) == 0


async def test_budget_cap_pauses_paid_calls(store: Store) -> None:
    settings = llm_settings(
        prices={"fake:judge": {"input_per_mtok": 1_000_000.0, "output_per_mtok": 0.0}}, monthly_budget_usd=5.0
    )
    llm = ScriptedLlm()
    cache = SqlCallCache(store)
    b = backend(settings, cache, llm)
    doc = match_doc()
    await b.judge(entity_name="A", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")  # spends > $5
    with pytest.raises(BudgetExhausted, match="monthly LLM budget"):
        await b.judge(entity_name="B", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    # a cached call is free and still answers
    await b.judge(entity_name="A", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    assert llm.calls["judge"] == 1
    now = datetime(2025, 3, 14, 12, tzinfo=UTC)
    with pytest.raises(RetryLater) as info:
        await paid(b.judge(entity_name="C", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en"), now=now)
    assert info.value.defer == datetime(2025, 4, 1, tzinfo=UTC) - now
    # next month the budget is fresh
    later = Budget(monthly_usd=5.0, clock=lambda: datetime.now(UTC) + timedelta(days=40))
    b2 = llm_backend(settings, cache=cache, raw_models={r: llm.model() for r in ROLES},
                    factory=model_factory(settings, cache=cache, budget=later))
    await b2.judge(entity_name="D", document=doc, facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    async with store.session() as s:
        summary = await cost_summary(s, monthly_budget_usd=5.0)
    assert summary.budget_exhausted and summary.month_cost_usd > 5.0


def test_next_month_rolls_over_the_year() -> None:
    assert next_month(datetime(2025, 12, 31, 23, tzinfo=UTC)) == datetime(2026, 1, 1, tzinfo=UTC)


def test_missing_api_key_for_a_hosted_model_is_a_startup_error() -> None:
    settings = Settings(agents={
        "backend": "llm", "judge_model": "openai:gpt-4o-mini", "generator_model": "openai:gpt-4o",
        "verifier_model": "openai:gpt-4o-mini", "translator_model": "openai:gpt-4o-mini",
    })
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        check_config(settings)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_services(settings, board=SourceBoard())
    ok = settings.model_copy(update={"secrets": {"OPENAI_API_KEY": SecretStr("sk-test")}})
    assert check_config(ok)["generate"].name == "gpt-4o"
    assert "sk-test" not in repr(check_config(ok))


def test_a_named_key_variable_must_be_set() -> None:
    settings = llm_settings(providers={"fake": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "FAKE_KEY"}})
    with pytest.raises(ConfigError, match="FAKE_KEY"):
        check_config(settings)


def test_unknown_provider_and_bad_model_strings_are_named() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        check_config(llm_settings(judge_model="nope:x"))
    with pytest.raises(ConfigError, match="provider>:<model>"):
        check_config(llm_settings(judge_model="gpt-4o"))


def test_local_openai_compatible_provider_needs_no_key() -> None:
    resolved = check_config(llm_settings())
    assert resolved["judge"].base_url == "http://127.0.0.1:9/v1" and resolved["judge"].api_key is None


def test_verifier_must_differ_from_generator(tmp_path: object) -> None:
    with pytest.raises(Exception, match="verifier_model must differ"):
        llm_settings(verifier_model="fake:gen")
    assert llm_settings(verifier_model="fake:gen", allow_same_verifier=True).agents.verifier_model == "fake:gen"
    assert load_settings().agents.probe_max_new_tokens == 48
