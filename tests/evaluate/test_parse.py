from __future__ import annotations

import pytest

from clkt.evaluate.parse import parse_answer_letter


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"), (" B\n\nQuestion: next", "B"), ("(C) Paris", "C"), ("**D**", "D"), ("D. Paris", "D"), ("A: Tokyo", "A"),
        ("A", "A"), ("B)", "B"), ("Ａ", "A"), ("The answer is C.", "C"), ("Answer: (b)", "B"), ("答案：C", "C"),
        ("正解はB", "B"), ("Réponse : D", "D"), ("Respuesta: A", "A"), ("Option B is right", "B"),
        ("B. Paris\n\nQuestion: x\nA. y", "B"),
    ],
)
def test_letters_that_answer(text: str, letter: str) -> None:
    assert parse_answer_letter(text) == letter


@pytest.mark.parametrize(
    "text",
    ["A film directed by Osric", "A Paris", "It is A great film", "I think so", "", "The answer is a film",
     "\nA. Berlin\nB. Paris", "Because"],
)
def test_not_an_answer(text: str) -> None:
    assert parse_answer_letter(text) is None
