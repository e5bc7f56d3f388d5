"""The open-answer prompts per target kind, the stop rule, and greedy generation on the embedded instruct target."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from agents.cache import MemoryCallCache
from clkt.config import AgentSettings, ProviderSettings, TargetSettings
from clkt.errors import AgentError
from clkt.openqa.generate import ApiOpenAnswer
from clkt.openqa.prompts import FEW_SHOT, INSTRUCTIONS, LABELS, cut, open_text
from clkt.openqa.score import score_answer
from clkt.openqa.text import answer_spans
from clkt.targets.api import ApiTargets
from tests.fakes.openai_server import FakeOpenAI


def test_every_language_has_its_instruction_labels_and_examples() -> None:
    assert set(INSTRUCTIONS) == set(LABELS) == set(FEW_SHOT) == {"en", "ja", "zh", "fr", "es"}
    assert all(len(shots) == 3 for shots in FEW_SHOT.values())


def test_base_frame_ends_at_the_answer_label_and_chat_has_no_examples() -> None:
    base = open_text("Who directed Barbie?", "en", chat=False)
    assert base.endswith("Question: Who directed Barbie?\nAnswer:") and base.count("Question:") == 4
    chat = open_text("『バービー』の監督は？", "ja", chat=True)
    assert chat == f"{INSTRUCTIONS['ja']}\n\n『バービー』の監督は？" and "答え：" not in chat
    with pytest.raises(ValueError, match="no open-answer prompt"):
        open_text("Wer?", "de", chat=True)
    with pytest.raises(ValueError, match="needs its text"):
        open_text("  ", "en", chat=True)


def test_the_few_shot_answers_are_right_by_the_normaliser() -> None:
    """The examples follow the conventions the scorer reads (a frame answer is scored as the model would give it)."""
    from clkt.openqa.question import AnswerKind, LangGold

    for lang, shots in FEW_SHOT.items():  # a name, a whole date, a number
        for (_q, a), kind in zip(shots, (AnswerKind.name, AnswerKind.date, AnswerKind.number), strict=True):
            got = score_answer(a, gold=LangGold(answer=a), lang=lang, kind=kind)
            assert got.verdict.value == "CORRECT", (lang, a, got)


def test_the_stop_rule_keeps_the_first_line() -> None:
    assert cut(" Greta Gerwig\nQuestion: Who wrote it?\nAnswer: x") == "Greta Gerwig"
    assert cut("\n\n  1989  ") == "1989" and cut("") == ""
    assert answer_spans("Réponse : Greta Gerwig\nQuestion : Qui ?", "fr")[-1] == "Greta Gerwig"


@pytest.mark.slow
def test_greedy_answers_on_the_embedded_instruct_target(models_data_dir: Path) -> None:
    """SmolLM2-135M-Instruct answers five questions greedily: one line each, within the budget, deterministic."""
    import torch

    from clkt.evaluate.memory import BatchSizer
    from clkt.openqa.generate import OpenPrompt, generate_answers
    from clkt.targets.loader import load_target

    torch.set_num_threads(2)
    target = TargetSettings(name="smol", model="embedded:smollm2-135m-instruct", kind="instruct")
    model, tok = load_target(target, data_dir=models_data_dir, device="cpu")
    qs = [OpenPrompt(question=q, lang=lang) for lang, q in [
        ("en", "What is the capital of France?"), ("fr", "Quelle est la capitale de la France ?"),
        ("es", "¿Cuál es la capital de Francia?"), ("ja", "フランスの首都はどこですか？"), ("zh", "法国的首都是哪里？")]]
    ticks: list[int] = []
    first = generate_answers(model, tok, target, qs, sizer=BatchSizer(size=4, automatic=False), max_new_tokens=16,
                             progress=ticks.append)
    again = generate_answers(model, tok, target, qs, sizer=BatchSizer(size=2, automatic=False), max_new_tokens=16)
    assert len(first) == 5 and sum(ticks) == 5 and all("\n" not in a for a in first)
    assert first == again  # greedy: the same answers whatever the batch
    assert "paris" in first[0].casefold()


@pytest.fixture
def _loopback() -> Iterator[None]:
    with override_allow_model_requests(True):  # only the fake server on 127.0.0.1 is ever reached
        yield


@pytest.mark.usefixtures("_loopback")
async def test_an_api_target_answers_through_the_agents_stack() -> None:
    from clkt.openqa.generate import OpenPrompt, api_answers

    target = TargetSettings(name="api-t", model="fake:tiny-chat", backend="api", kind="instruct",
                            cutoff=date(2024, 1, 1))
    qs = [OpenPrompt(question="Who directed Barbie?", lang="en"), OpenPrompt(question="Qui ?", lang="fr")]
    async with FakeOpenAI() as server:
        agents = AgentSettings(providers={"fake": ProviderSettings(base_url=server.base_url, rpm=100_000,
                                                                  max_attempts=1, timeout_s=5)})
        server.script = [{"text": "Greta Gerwig\nQuestion: next?"}, {"status": 400}]
        api = ApiTargets.build(agents=agents, secret=lambda _e: None, cache=MemoryCallCache())
        first = await api_answers(api, target, qs, concurrency=1)
        again = await api_answers(api, target, qs[:1], concurrency=1)
        assert server.stats.calls == 2
    ok, failed = first
    assert isinstance(ok, ApiOpenAnswer) and ok.text == "Greta Gerwig" and not ok.cached and ok.input_tokens > 0
    assert isinstance(failed, AgentError)  # a failed call is returned, the other kept
    assert isinstance(again[0], ApiOpenAnswer) and again[0].cached and again[0].text == "Greta Gerwig"
