from __future__ import annotations

import pytest

from clkt.evaluate.parse import ParseMode, letter_decided, parse_answer_letter, parse_letter


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


@pytest.mark.parametrize(
    ("text", "strict", "reference"),
    [
        ("A film directed by Osric", None, "A"),  # the reference rule takes the article as answer A
        ("The answer is C.", "C", "C"),
        ("\nA. Berlin\nB. Paris", None, "A"),
        ("I think so", None, None),
        ("ABBA is a band; D", None, "D"),  # letters inside words do not count
        ("答案：C", "C", "C"),
    ],
)
def test_reference_rule_differs_from_strict(text: str, strict: str | None, reference: str | None) -> None:
    assert parse_letter(text, "strict") == strict
    assert parse_letter(text, "reference") == reference


COMPLETIONS = [
    "B", "B.", " B. Paris\n\nQuestion: next", "A film about A", "A. Berlin\nB. Paris\nC. Rome", "(C) Paris", "**D**",
    "The answer is C.", "The answer is Cairo", "Answer: (b) yes", "答案：C。", "正解はB です", "I think A is right",
    "Because D", "D\n", "A: Tokyo", "Option B is right", "Ａ．", "A Paris", "nothing here",
]


@pytest.mark.parametrize("mode", ["strict", "reference"])
@pytest.mark.parametrize("full", COMPLETIONS)
def test_generation_stopped_at_the_decided_letter_parses_as_the_full_completion(full: str, mode: ParseMode) -> None:
    # generation stops at the first prefix where the letter is decided; that prefix must parse as the whole
    for end in range(1, len(full) + 1):
        if letter_decided(full[:end], mode):
            assert parse_letter(full[:end], mode) == parse_letter(full, mode), (full[:end], full)
            break
    assert not letter_decided("", mode) and not letter_decided("B", mode)  # "B" may become "But"
