"""Batch mode against fake OpenAI Batch / Anthropic Message Batches servers on loopback, with a real SQLite
store: the life cycle (create, in progress, partial failure, expired, cancelled, results), the same typed
validation as online, batch prices, and the restart cases of a kill -9 during submission."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError
from pydantic_ai.models import override_allow_model_requests

from agents.batch import BatchDispatcher, BatchPending
from agents.llm import LlmBackend
from clkt.config import Settings
from clkt.errors import ConfigError
from storage.engine import Store
from storage.llm_batches import SqlBatchStore
from storage.llm_cache import SqlCallCache, cost_summary
from tests.agents._util import LIVERPOOL_SWANSEA, check_config, llm_backend, match_doc, model_factory
from tests.fakes.batch_server import FakeBatchProvider

PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cached_input_per_mtok": 0.5}


@pytest.fixture(autouse=True)
def _allow_loopback_requests() -> Iterator[None]:
    with override_allow_model_requests(True):  # only the fake servers on 127.0.0.1 are ever reached
        yield


@pytest.fixture
async def provider() -> AsyncIterator[FakeBatchProvider]:
    async with FakeBatchProvider() as p:
        yield p


def batch_settings(p: FakeBatchProvider, kind: str = "openai", **agents: Any) -> Settings:
    url = p.openai_url if kind == "openai" else p.anthropic_url
    base: dict[str, Any] = {
        "backend": "llm", "mode": "batch",
        "judge_model": f"{kind}:judge-m", "generator_model": f"{kind}:gen-m", "verifier_model": f"{kind}:ver-m",
        "translator_model": f"{kind}:tr-m", "output_retries": 1,
        "providers": {kind: {"base_url": url}},
        "prices": {f"{kind}:judge-m": PRICE, f"{kind}:gen-m": PRICE},
        "batch": {"flush_after_s": 0, "poll_interval_s": 0.01, "max_tries": 2},
    }
    base.update(agents)
    return Settings(agents=base, spec={"languages": ["en", "fr", "ja"]})


def backend(s: Settings, store: Store) -> tuple[LlmBackend, BatchDispatcher]:
    cache = SqlCallCache(store)
    bstore = SqlBatchStore(store)
    d = BatchDispatcher(store=bstore, flush_after_s=0, poll_interval_s=0.0, max_tries=s.agents.batch.max_tries)
    f = model_factory(s, cache=cache, batch_store=bstore, dispatcher=d)
    return llm_backend(s, cache=cache, factory=f), d


async def judge(b: LlmBackend, name: str) -> bool:
    v = await b.judge(entity_name=name, document=match_doc(), facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    return v.known


async def until_answered(d: BatchDispatcher, call: Any, *, rounds: int = 10) -> Any:
    """Run the call the way a stage task does: released while pending, run again after a dispatcher tick."""
    for _ in range(rounds):
        try:
            return await call()
        except BatchPending:
            await d.tick()
    raise AssertionError(f"no answer after {rounds} rounds")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_batch_life_cycle_answers_with_typed_outputs_at_batch_price(
    provider: FakeBatchProvider, store: Store, kind: str
) -> None:
    s = batch_settings(provider, kind)
    b, d = backend(s, store)
    with pytest.raises(BatchPending):  # queued: the task is released, nothing waits in memory
        await judge(b, "Liverpool vs Swansea")
    for i in range(3):
        with pytest.raises(BatchPending):
            await judge(b, f"other {i}")
    await d.tick()  # one batch of the four requests
    assert provider.stats.batches_created == 1 and sum(provider.stats.submissions.values()) == 4
    provider.polls_to_end = 2
    known = await until_answered(d, lambda: judge(b, "Liverpool vs Swansea"))
    assert known is False
    assert provider.stats.batches_created == 1 and provider.stats.resubmitted == 0
    async with store.session() as sess:
        summary = await cost_summary(sess)
    [judge_cost] = [st for st in summary.stages if st.stage == "judge"]
    assert judge_cost.calls == 1 and judge_cost.batch_calls == 1
    online = (judge_cost.input_tokens - judge_cost.cached_input_tokens) * 2.0 / 1e6 + \
        judge_cost.cached_input_tokens * 0.5 / 1e6 + judge_cost.output_tokens * 8.0 / 1e6
    assert judge_cost.cost_usd == pytest.approx(online * 0.5)  # batch price: half


async def test_generate_over_batch_validates_like_online_and_repairs_in_the_next_batch(
    provider: FakeBatchProvider, store: Store
) -> None:
    s = batch_settings(provider)
    b, d = backend(s, store)
    provider.plan = [{"invalid": 1}]  # the first answer quotes evidence that is not in the document
    doc = match_doc()
    mcqs = await until_answered(d, lambda: b.generate(entity_name="Liverpool vs Swansea", document=doc,
                                                       facts=LIVERPOOL_SWANSEA, n=2))
    assert mcqs and all(q.evidence in doc.text for q in mcqs)
    assert provider.stats.batches_created == 2  # the repair (a longer conversation) went into a second batch


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_expired_and_cancelled_requests_go_into_the_next_batch(
    provider: FakeBatchProvider, store: Store, kind: str
) -> None:
    s = batch_settings(provider, kind)
    b, d = backend(s, store)
    provider.plan = [{"expire_after": 1}, {"cancel": True}]
    names = ["a", "b", "c"]
    for n in names:
        with pytest.raises(BatchPending):
            await judge(b, n)
    await d.tick()  # batch 1: one runs, two expire
    await d.tick()  # ... ends; the two expired ones are queued again and go into batch 2, which is cancelled
    await d.tick()  # batch 2 ends cancelled: tries used up (max_tries = 2) for those two
    assert provider.stats.batches_created == 2
    assert await judge(b, "a") is False  # the one that ran is answered
    with pytest.raises(ModelAPIError, match="cancel"):  # out of tries: the task gets the error (and its retry)
        await judge(b, "b")
    with pytest.raises(BatchPending):  # ... which queues the call again
        await judge(b, "b")
    assert provider.stats.resubmitted == 0  # nothing was run twice


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_partial_failure_errors_only_the_failed_requests(
    provider: FakeBatchProvider, store: Store, kind: str
) -> None:
    s = batch_settings(provider, kind)
    b, d = backend(s, store)
    provider.plan = [{"error_ids": 1}]
    for n in ("x", "y"):
        with pytest.raises(BatchPending):
            await judge(b, n)
    await d.tick()
    await d.tick()
    results = {}
    for n in ("x", "y"):
        try:
            results[n] = await judge(b, n)
        except ModelHTTPError as e:  # the request's own error, as the online call would raise it
            results[n] = e.status_code
    assert sorted(map(str, results.values())) == ["500", "False"]
    failed = next(n for n, r in results.items() if r == 500)
    with pytest.raises(BatchPending):  # the failed request is queued again on the task's retry
        await judge(b, failed)


async def test_batch_mode_for_a_provider_without_batch_api_is_a_config_error(store: Store) -> None:

    s = Settings(agents={
        "backend": "llm", "mode": "online", "stage_modes": {"translate": "batch"},
        "judge_model": "vllm:a", "generator_model": "vllm:b", "verifier_model": "vllm:c", "translator_model": "vllm:d",
        "providers": {"vllm": {"base_url": "http://127.0.0.1:9/v1"}},
    })
    with pytest.raises(ConfigError) as e:
        check_config(s)
    assert "agents.stage_modes.translate" in str(e.value) and "no batch API" in str(e.value)


class _Killed(BaseException):
    """Stands for a kill -9: nothing after it runs (not an Exception, so no handler sees it)."""


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("moment", ["before_create", "after_create"])
async def test_a_kill_during_submission_resumes_the_same_batch(
    provider: FakeBatchProvider, store: Store, kind: str, moment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = batch_settings(provider, kind)
    b, d = backend(s, store)
    for n in ("p", "q", "r"):
        with pytest.raises(BatchPending):
            await judge(b, n)
    real_update = SqlBatchStore.update_batch

    async def dying_update(self: SqlBatchStore, batch_id: str, **fields: Any) -> None:
        if moment == "after_create" and "provider_batch_id" in fields:
            raise _Killed  # the provider created the batch; its id never reached the store
        if moment == "before_create" and "input_file_id" in fields:
            await real_update(self, batch_id, **fields)
            raise _Killed  # the file is uploaded (and recorded); the create call never went out
        await real_update(self, batch_id, **fields)

    monkeypatch.setattr(SqlBatchStore, "update_batch", dying_update)
    if kind == "anthropic" and moment == "before_create":
        monkeypatch.setattr(SqlBatchStore, "update_batch", real_update)  # no file step: kill before the create
        monkeypatch.setattr(BatchDispatcher, "_submit", _die)
    with pytest.raises(_Killed):
        await d.tick()
    monkeypatch.setattr(SqlBatchStore, "update_batch", real_update)
    monkeypatch.undo()
    # the restart: a new process with the same store
    b2, d2 = backend(s, store)
    await d2.tick()  # reconciles the pending batch: adopts it, or submits it when the provider never got it
    assert provider.stats.batches_created == 1
    assert d2.stats.adopted_batches == (1 if moment == "after_create" else 0)
    for n in ("p", "q", "r"):
        assert await until_answered(d2, lambda n=n: judge(b2, n)) is False
    assert provider.stats.resubmitted == 0 and max(provider.stats.submissions.values()) == 1
    assert provider.stats.batches_created == 1


async def _die(*_a: Any, **_k: Any) -> None:
    raise _Killed


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_cached_input_tokens_from_the_provider_usage_are_stored_and_priced(
    provider: FakeBatchProvider, store: Store, kind: str
) -> None:
    s = batch_settings(provider, kind)
    b, d = backend(s, store)

    async def judge_in(lang: str) -> bool:
        v = await b.judge(entity_name="Liverpool vs Swansea", document=match_doc(), facts=LIVERPOOL_SWANSEA,
                          response=f"answer in {lang}", lang=lang)
        return v.known

    for lang in ("fr", "ja"):
        with pytest.raises(BatchPending):
            await judge_in(lang)
    await d.tick()
    for lang in ("fr", "ja"):
        assert await until_answered(d, lambda lang=lang: judge_in(lang)) is False
    async with store.session() as sess:
        [st] = (await cost_summary(sess)).stages
    assert provider.stats.cached_tokens > 0  # the second request repeats the first one's prefix
    assert st.cached_input_tokens == provider.stats.cached_tokens
    full = (st.input_tokens * 2.0 + st.output_tokens * 8.0) / 1e6 * 0.5
    assert st.cost_usd < full  # cached input is cheaper than input


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_refused_batch_gives_its_callers_the_reason_and_no_retry_loop(
    provider: FakeBatchProvider, store: Store, kind: str
) -> None:
    from clkt.errors import AgentError

    s = batch_settings(provider, kind)
    b, d = backend(s, store)
    provider.plan = [{"refuse": True}]
    with pytest.raises(BatchPending):
        await judge(b, "z")
    await d.tick()  # the create answers 400: the batch ends refused, nothing stays pending
    assert provider.stats.batches_created == 0
    with pytest.raises(AgentError, match=r"refused the batch.*400.*not available for batch"):
        await judge(b, "z")
    with pytest.raises(BatchPending):  # the task's retry queues it again; the provider accepts it this time
        await judge(b, "z")
    assert await until_answered(d, lambda: judge(b, "z")) is False
    assert provider.stats.batches_created == 1


async def test_a_provider_outage_leaves_the_batch_pending_and_the_next_tick_submits_it(
    provider: FakeBatchProvider, store: Store
) -> None:
    s = batch_settings(provider)
    b, d = backend(s, store)
    with pytest.raises(BatchPending):
        await judge(b, "w")
    port = provider.port
    await provider.__aexit__(None, None, None)  # the provider is down
    with pytest.raises(Exception):  # noqa: B017 - the service logs it and tries again later
        await d.tick()
    from aiohttp import web

    provider._runner = web.AppRunner(provider.app, access_log=None)
    await provider._runner.setup()
    await web.TCPSite(provider._runner, "127.0.0.1", port).start()
    assert await until_answered(d, lambda: judge(b, "w")) is False
    assert provider.stats.batches_created == 1 and provider.stats.resubmitted == 0


async def test_answered_requests_are_pruned_once_the_call_cache_holds_them(
    provider: FakeBatchProvider, store: Store
) -> None:
    s = batch_settings(provider)
    b, d = backend(s, store)
    for n in ("k1", "k2"):
        with pytest.raises(BatchPending):
            await judge(b, n)
    await d.tick()
    assert await until_answered(d, lambda: judge(b, "k1")) is False  # k1 in the call cache; k2 answered, unread
    bstore = SqlBatchStore(store)
    assert await bstore.prune_answered() == 1
    assert await judge(b, "k2") is False  # still answered from its stored result
    assert await bstore.prune_answered() == 1
    assert await judge(b, "k1") is False and provider.stats.batches_created == 1  # the cache answers now
