"""CircularEval around the letter scorers, on the CPU with fake "models": one that always answers A (position
bias) scores 25 % plainly and 0 % circularly; one that knows the answer keeps 100 % under every rotation. The
runner adds the `<scorer>-circular` results beside the plain ones only when enabled, and only on the test split."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import clkt.evaluate.runner as runner
from clkt.config import GpuSettings, TargetSettings
from clkt.evaluate.circular import circular_enabled, circular_items, circular_name, rotate
from clkt.evaluate.prompts import LETTERS
from clkt.evaluate.results import Variant
from clkt.evaluate.scorers import Scored
from clkt.snapshots.layout import QuestionRow
from clkt.targets.prompting import RenderedPrompt

TARGET = TargetSettings(name="t", model="x/y", kind="base")


def _rows(n: int = 40, split: str = "test") -> list[QuestionRow]:
    """Questions whose right answers are spread evenly over A-D."""
    out = []
    for q in range(n):
        k = q % 4
        opts = [f"wrong {q}.{j}" for j in range(3)]
        opts.insert(k, f"right {q}")
        out.append(QuestionRow(qid=q, entity_id=q // 2, domain="music", lang="en", split=split, question=f"Which one ({q})?",
                               options=opts, answer=LETTERS[k], answer_index=k, slot="s"))
    return out


def always_a(rows: Sequence[QuestionRow]) -> list[str | None]:
    return ["A" for _ in rows]


def knows(rows: Sequence[QuestionRow]) -> list[str | None]:
    return [LETTERS[next(i for i, o in enumerate(r.options) if o.startswith("right"))] for r in rows]


def test_a_position_biased_model_scores_25_percent_plainly_and_0_circularly() -> None:
    rows = _rows()
    plain = always_a(rows)
    assert sum(p == r.answer for p, r in zip(plain, rows, strict=True)) / len(rows) == 0.25
    items = circular_items(rows, plain, always_a, scorer="generate", variant=Variant.injected)
    assert len(items) == len(rows) and {i.scorer for i in items} == {"generate-circular"}
    assert sum(i.correct for i in items) == 0
    assert all(i.predicted is None for i in items)  # the four rotations disagree on the option
    assert items[1].raw == "ABCD"  # "A" under rotation k is the original option k


def test_a_model_that_knows_keeps_every_rotation() -> None:
    rows = _rows()
    items = circular_items(rows, knows(rows), knows, scorer="letter-logprob", variant=Variant.base)
    assert all(i.correct for i in items) and [i.predicted for i in items] == [r.answer for r in rows]
    assert {i.scorer for i in items} == {"letter-logprob-circular"} and {i.variant for i in items} == {Variant.base}


def test_rotations_move_the_answer_with_its_option() -> None:
    row = _rows(4)[2]  # the answer is C
    seen = set()
    for k in range(4):
        r = rotate(row, k)
        assert r.options[r.answer_index] == row.text_answer and r.answer == LETTERS[r.answer_index]
        assert sorted(r.options) == sorted(row.options)
        seen.add(r.answer)
    assert seen == set(LETTERS)  # the right option stands once under every letter
    assert circular_name("generate") == "generate-circular" and len(circular_name("letter-logprob")) <= 32  # QuestionResult.scorer


def test_only_the_test_split_is_scored_circularly() -> None:
    rows = _rows(8) + _rows(4, split="val")
    items = circular_items(rows, always_a(rows), always_a, scorer="generate", variant=Variant.injected)
    assert len(items) == 8 and all(i.split == "test" for i in items)


def test_enabled_by_gpu_or_by_the_target() -> None:
    assert not circular_enabled(TARGET, GpuSettings())
    assert circular_enabled(TARGET, GpuSettings(circular=True))
    assert not circular_enabled(TARGET.model_copy(update={"circular": False}), GpuSettings(circular=True))
    assert circular_enabled(TARGET.model_copy(update={"circular": True}), GpuSettings())


class _Tokenizer:
    chat_template = None


def _fake_scorer(calls: list[int]) -> Any:
    """`score_prompts` of a position-biased model: reads nothing, answers A (one call per batch of prompts)."""

    def score(name: Any, model: Any, tokenizer: Any, prompts: Sequence[RenderedPrompt], **kw: Any) -> list[Scored]:
        calls.append(len(prompts))
        assert all("A. " in p.text for p in prompts)  # real MCQ prompts of the (rotated) rows
        return [Scored("A", "A") for _ in prompts]

    return score


@pytest.mark.parametrize("circular", [False, True])
def test_the_runner_adds_the_circular_results_beside_the_plain_ones(monkeypatch: pytest.MonkeyPatch, circular: bool) -> None:
    calls: list[int] = []
    monkeypatch.setattr(runner, "score_prompts", _fake_scorer(calls))
    rows = _rows(20)
    items = runner.answer_questions(None, _Tokenizer(), TARGET, rows, scorers=["generate"], gpu=GpuSettings(circular=circular),
                                    variant=Variant.injected)
    plain = [i for i in items if i.scorer == "generate"]
    assert len(plain) == 20 and sum(i.correct for i in plain) == 5  # 25 %
    circ = [i for i in items if i.scorer == "generate-circular"]
    if not circular:
        assert circ == [] and calls == [20]
        return
    assert len(circ) == 20 and sum(i.correct for i in circ) == 0  # 0 %
    assert calls == [20, 60]  # the plain pass, then the three other rotations in one call


@pytest.mark.slow
def test_circular_on_the_embedded_model(models_data_dir: Path) -> None:
    """The real letter scorer under the four rotations: a question right circularly is right plainly, with the
    same letter; every rotation's pick is recorded."""
    from clkt.config import EMBEDDED_TARGET
    from clkt.targets import cached_target

    model, tok = cached_target(EMBEDDED_TARGET, data_dir=models_data_dir)
    rows = [
        QuestionRow(qid=i, entity_id=i, domain="music", lang=lang, split="test", question=q, options=o, answer=LETTERS[k], answer_index=k,
                    slot="s")
        for i, (q, o, lang, k) in enumerate([
            ("What is the capital of France?", ["Berlin", "Paris", "Rome", "Madrid"], "en", 1),
            ("How many legs does a spider have?", ["Six", "Ten", "Four", "Eight"], "en", 3),
            ("Which planet is known as the red planet?", ["Venus", "Jupiter", "Mars", "Saturn"], "en", 2),
            ("¿Cuál es la capital de España?", ["Lisboa", "Madrid", "París", "Roma"], "es", 1),
        ])
    ]
    items = runner.answer_questions(model, tok, EMBEDDED_TARGET, rows, scorers=["letter-logprob"], gpu=GpuSettings(circular=True),
                                    variant=Variant.base)
    plain = {i.qid: i for i in items if i.scorer == "letter-logprob"}
    circ = {i.qid: i for i in items if i.scorer == "letter-logprob-circular"}
    assert set(plain) == set(circ) == {0, 1, 2, 3}
    for q, c in circ.items():
        assert len(c.raw) == 4 and c.raw[0] == plain[q].predicted  # rotation 0 is the plain answer
        if c.correct:
            assert plain[q].correct and c.predicted == plain[q].predicted
    assert sum(c.correct for c in circ.values()) <= sum(p.correct for p in plain.values())
