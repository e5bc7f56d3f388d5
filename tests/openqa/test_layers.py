"""The layers side by side: the normaliser always, the jury where configured (FunctionModel judges), counted apart."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.cache import MemoryCallCache
from agents.factory import ModelFactory
from agents.jury import Jury, JurySettings
from clkt.config import AgentSettings
from clkt.openqa.layers import LayerCounts, agreement, score_layers
from clkt.openqa.question import ShortAnswerQuestion
from tests.fakes.function_llm import user_prompt

JUDGES = ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku", "local:qwen2.5-7b")
Q = ShortAnswerQuestion.model_validate({
    "qid": "q", "entity": "Barbie", "fact": "director", "kind": "name",
    "questions": {"en": "Who directed Barbie?", "ja": "『バービー』の監督は？"},
    "golds": {"en": {"answer": "Greta Gerwig", "aliases": ["Gerwig"]}, "ja": {"answer": "グレタ・ガーウィグ"}},
})


def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Grades CORRECT when the answer block names Gerwig in any script (a lenient judge)."""
    answer = user_prompt(messages).split("<answer>")[-1]
    verdict = "CORRECT" if "Gerwig" in answer or "ガーウィグ" in answer else "INCORRECT"
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"verdict": verdict, "reason": "."})])


def jury() -> Jury:
    factory = ModelFactory(agents=AgentSettings(), secret=lambda _e: None, cache=MemoryCallCache())
    raw = {j: FunctionModel(judge, model_name=j) for j in JUDGES}
    return Jury(settings=JurySettings(judges=JUDGES), factory=factory, raw_models=raw)


async def test_both_layers_are_kept_and_counted_apart() -> None:
    j = jury()
    got = [await score_layers(Q, "en", "Gerwig", jury=j), await score_layers(Q, "ja", "Greta Gerwig", jury=j),
           await score_layers(Q, "ja", "", jury=j), await score_layers(Q, "en", "Noah Baumbach")]
    assert [g.normaliser.verdict.value for g in got] == ["CORRECT", "INCORRECT", "NOT_ATTEMPTED", "INCORRECT"]
    assert [g.jury.verdict if g.jury else None for g in got] == ["CORRECT", "CORRECT", "NOT_ATTEMPTED", None]
    assert got[1].normaliser.other_language and got[1].jury is not None and got[1].jury.prompt_version
    counts = LayerCounts.of(got)
    assert counts.n == {"en": 2, "ja": 2} and counts.other_language == {"ja": 1, "en": 0}
    assert counts.jury["ja"] == {"CORRECT": 1, "NOT_ATTEMPTED": 1} and counts.normaliser["en"]["INCORRECT"] == 1
    assert agreement(got) == (2, 3)  # the lenient judge calls the Latin answer to a Japanese question right
