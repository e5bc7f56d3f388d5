"""Cache-friendly prompts (what repeats first) and the pricing of cached input tokens and batch answers."""

from __future__ import annotations

import os
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from agents.cache import cost_usd
from agents.llm import build_user_prompt
from clkt.config import PriceSettings
from clkt.outputs import MCQ
from tests.agents._util import match_doc

PRICE = PriceSettings(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)


def _mcq(i: int) -> MCQ:
    return MCQ(question=f"Question number {i} about the match?", options=[f"a{i}", f"b{i}", f"c{i}", f"d{i}"],
               answer_index=0, evidence="Liverpool won", slot=f"s{i}")


@pytest.mark.parametrize(("agent", "varying"), [
    ("judge", [{"lang": "fr", "response": "Je ne sais pas."}, {"lang": "ja", "response": "知りません。"}]),
    ("translate_document", [{"lang": "fr"}, {"lang": "ja"}]),
    ("verify", [{"mcq": _mcq(1)}, {"mcq": _mcq(2)}]),
])
def test_calls_of_one_entity_share_a_prefix_that_holds_the_document(agent: str, varying: list[dict[str, Any]]) -> None:
    doc = match_doc().text
    a, b = (build_user_prompt(agent, entity_name="Liverpool vs Swansea", document=doc, n=3, **v) for v in varying)
    shared = os.path.commonprefix([a, b])  # noqa: RUF071 - prompts, compared character by character on purpose
    assert doc in shared  # the document is in the part the provider's prefix cache can serve
    assert len(shared) >= len(doc)


def test_the_target_language_and_the_response_come_last() -> None:
    p = build_user_prompt("judge", entity_name="E", document="D", response="R", lang="fr")
    assert p.index("<document>") < p.index("French") < p.index("<response>")
    t = build_user_prompt("translate_mcq", mcq=_mcq(1), lang="ja")
    assert t.index("<source>") < t.index("lang = 'ja'")


def _response(usage: RequestUsage, *, batch: bool = False) -> ModelResponse:
    return ModelResponse(parts=[TextPart("ok")], usage=usage, model_name="m",
                         provider_details={"processing": "batch"} if batch else None)


def test_cached_input_tokens_are_priced_as_cached() -> None:
    usage = RequestUsage(input_tokens=1000, cache_read_tokens=800, output_tokens=100)
    online = cost_usd(_response(usage), PRICE)
    assert online == pytest.approx((200 * 2.0 + 800 * 0.5 + 100 * 8.0) / 1e6)
    assert cost_usd(_response(usage, batch=True), PRICE) == pytest.approx(online * 0.5)
    no_cached_price = PriceSettings(input_per_mtok=2.0, output_per_mtok=8.0)
    assert cost_usd(_response(usage), no_cached_price) == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)


def test_a_model_without_a_configured_price_falls_back_to_genai_prices_or_zero() -> None:
    usage = RequestUsage(input_tokens=1_000_000, output_tokens=0)
    known = ModelResponse(parts=[TextPart("ok")], usage=usage, model_name="gpt-4o-mini", provider_name="openai")
    assert cost_usd(known, None) == pytest.approx(0.15, rel=0.5)  # genai-prices' list price
    unknown = ModelResponse(parts=[TextPart("ok")], usage=usage, model_name="no-such-model-anywhere")
    assert cost_usd(unknown, None) == 0.0
