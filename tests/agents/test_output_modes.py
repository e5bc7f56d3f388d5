"""Per-role `max_tokens` and output modes against the fake OpenAI-compatible server on loopback: the cap reaches the
request body; a model that answers JSON in text or a server that refuses tools falls back to JSON in the prompt
(`output_modes` "auto"), or is asked so from the start ("prompted")."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai.models import override_allow_model_requests

from agents.cache import MemoryCallCache
from agents.llm import LlmBackend
from clkt.config import AgentSettings, Settings
from clkt.errors import AgentError
from clkt.outputs import KnownVerdict
from tests.agents._util import LIVERPOOL_SWANSEA, llm_backend, llm_settings, match_doc
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def _allow_loopback_requests() -> Iterator[None]:
    with override_allow_model_requests(True):  # only the fake server on 127.0.0.1 is reached
        yield


def settings_for(server: FakeOpenAI, **agents: Any) -> Settings:
    return llm_settings(providers={"fake": {"base_url": server.base_url, "rpm": 6000, "tpm": 10_000_000,
                                            "timeout_s": 5.0, "max_attempts": 1}}, **agents)


async def judge(b: LlmBackend) -> KnownVerdict:
    return await b.judge(entity_name="Liverpool vs Swansea", document=match_doc(), facts=LIVERPOOL_SWANSEA,
                         response="Liverpool won 2-1.", lang="en")


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(record_requests=True) as s:
        yield s


async def test_each_roles_max_tokens_is_in_its_request_body(server: FakeOpenAI) -> None:
    b = llm_backend(settings_for(server, max_tokens={"judge": 321, "generate": 2048}), cache=MemoryCallCache())
    await judge(b)
    await b.generate(entity_name="Liverpool vs Swansea", document=match_doc(), facts=LIVERPOOL_SWANSEA, n=1)
    await b.translate_mcq(mcq=(await b.generate(entity_name="Liverpool vs Swansea", document=match_doc(),
                                                facts=LIVERPOOL_SWANSEA, n=1))[0],
                          document=match_doc(), facts=LIVERPOOL_SWANSEA, target_lang="fr")
    caps = [(r["tools"][0]["function"]["name"], r.get("max_tokens") or r.get("max_completion_tokens"))
            for r in server.stats.requests]
    assert [c for _, c in caps] == [321, 2048, None]  # the generate call of the translation came from the cache
    assert all(r["temperature"] == 0.0 for r in server.stats.requests)


@pytest.mark.parametrize("bad", [0, -5, 1.5, "many", True])
def test_max_tokens_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        AgentSettings.model_validate({"max_tokens": {"judge": bad}})
    with pytest.raises(ValidationError):
        AgentSettings.model_validate({"max_tokens": {"incontext": 5}})  # not an agent role
    assert AgentSettings.model_validate({"max_tokens": {"verify": 7}}).max_tokens_of("verify") == 7


@pytest.mark.parametrize("fault", ["json_in_text", "refuse_tools"])
async def test_auto_falls_back_to_json_in_the_prompt(fault: str, caplog: pytest.LogCaptureFixture) -> None:
    async with FakeOpenAI(record_requests=True, json_in_text=True, refuse_tools=fault == "refuse_tools") as server:
        b = llm_backend(settings_for(server, output_retries=1), cache=MemoryCallCache())
        with caplog.at_level("WARNING", logger="agents.llm"):
            v = await judge(b)
            again = await judge(b)
        assert isinstance(v, KnownVerdict) and v.reason and again == v
        assert b.prompted == {"judge"}
        with_tools = [r for r in server.stats.requests if r.get("tools")]
        assert len(with_tools) == (1 if fault == "refuse_tools" else 2)  # the tool tried once (and its one retry)
        assert not server.stats.requests[-1].get("tools")  # then the schema in the prompt, no tool
        assert sum("JSON in the text from now on" in r.getMessage() for r in caplog.records) == 1
        mcqs = await b.generate(entity_name="Liverpool vs Swansea", document=match_doc(), facts=LIVERPOOL_SWANSEA,
                                n=1)
        assert mcqs and b.prompted == {"judge", "generate"}


async def test_prompted_mode_never_sends_tools_and_tool_mode_keeps_the_one_line() -> None:
    async with FakeOpenAI(record_requests=True, json_in_text=True) as server:
        b = llm_backend(settings_for(server, output_modes={"judge": "prompted"}), cache=MemoryCallCache())
        assert isinstance(await judge(b), KnownVerdict)
        assert len(server.stats.requests) == 1 and not server.stats.requests[0].get("tools")
    async with FakeOpenAI(refuse_tools=True) as server:
        b = llm_backend(settings_for(server, output_modes={"judge": "tool"}), cache=MemoryCallCache())
        with pytest.raises(AgentError) as e:
            await judge(b)
        assert "\n" not in str(e.value) and b.prompted == set()
