"""Open answers through the evaluation's continuous generation: the stop rule is a line break, never the MCQ letter
parser (which would cut an answer at its first capital letter), and the answers are those of static batches."""

from __future__ import annotations

import pytest
import torch

from clkt.evaluate.decoding import generate_continuous
from clkt.evaluate.memory import BatchSizer
from clkt.evaluate.parse import letter_decided
from clkt.openqa.generate import generate_prompts, line_done
from clkt.targets.prompting import RenderedPrompt
from tests.evaluate._tiny import prompts, tiny_model, tiny_tokenizer


def test_the_stop_rule_is_a_line_break_after_the_answer() -> None:
    assert not line_done("") and not line_done("\n") and not line_done("  \n Paris")
    assert line_done(" Paris\nQuestion:") and line_done("A film\n")


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("batch", [1, 4])
def test_continuous_open_answers_match_static_batches(kind: str, batch: int) -> None:
    torch.set_num_threads(1)
    model, tok = tiny_model(kind, seed=batch + 3), tiny_tokenizer()
    ps = [RenderedPrompt(t, True) for t in prompts(17, seed=batch)]
    static = generate_prompts(model, tok, ps, sizer=BatchSizer(size=batch, automatic=False), max_new_tokens=12,
                              continuous=False)
    ticks: list[int] = []
    cont = generate_prompts(model, tok, ps, sizer=BatchSizer(size=batch, automatic=False), max_new_tokens=12,
                            progress=ticks.append)
    assert cont == static and sum(ticks) == len(ps)
    assert all("\n" not in a for a in cont)


def test_the_default_stop_is_still_the_letter_and_a_given_predicate_replaces_it() -> None:
    """`stop=None` keeps the MCQ behaviour (a row leaves once its letter is decided, where a row that never stops
    runs on); a given predicate is the only rule besides the end of sequence and the budget."""
    torch.set_num_threads(1)
    tok, model = tiny_tokenizer(), tiny_model("llama", seed=0)
    ps = [RenderedPrompt(t, True) for t in prompts(17, seed=0)]

    def run(**kw: object) -> list[str]:
        return generate_continuous(model, tok, ps, sizer=BatchSizer(size=4, automatic=False), max_new_tokens=12,
                                   **kw)  # type: ignore[arg-type]

    mcq, never, three = run(), run(stop=lambda _t: False), run(stop=lambda t: len(t.split()) >= 3)
    cut_at_letter = [i for i, (m, n) in enumerate(zip(mcq, never, strict=True)) if m != n]
    assert cut_at_letter and all(never[i].startswith(mcq[i]) and letter_decided(mcq[i]) for i in cut_at_letter)
    assert all(m == n for i, (m, n) in enumerate(zip(mcq, never, strict=True)) if i not in cut_at_letter)
    assert all(n.startswith(t) for t, n in zip(three, never, strict=True))
    assert all(len(t.split()) == 3 for t, n in zip(three, never, strict=True) if len(n.split()) >= 3)
