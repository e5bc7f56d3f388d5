"""The in-context prompt and its truncation rule."""

from __future__ import annotations

from clkt.incontext.prompt import (
    DOCUMENT_HEADER,
    MIN_DOCUMENT_TOKENS,
    TRUNCATION_MARK,
    build_prompt,
    estimate_tokens,
    fit_document,
)

OPTIONS = ["81 minutes", "97 minutes", "104 minutes", "90 minutes"]


def test_the_document_comes_first_and_the_question_in_its_own_language() -> None:
    p = build_prompt(document="Velmora Tide dure 97 minutes.", question="How long is Velmora Tide?", options=OPTIONS,
                     lang="en", cue=False, context_tokens=4096, max_new_tokens=16, count=estimate_tokens)
    assert p.text is not None and not p.truncated
    assert p.text.startswith(DOCUMENT_HEADER + "Velmora Tide dure 97 minutes.\n\n")
    assert p.text.rstrip().endswith("D. 90 minutes") and "How long is Velmora Tide?" in p.text


def test_the_floor_has_no_document() -> None:
    p = build_prompt(document=None, question="Q?", options=OPTIONS, lang="fr", cue=True, context_tokens=4096,
                     max_new_tokens=16, count=estimate_tokens)
    assert p.text is not None and DOCUMENT_HEADER not in p.text and p.text.endswith("Réponse :")


def test_a_long_document_keeps_its_head_cut_at_a_sentence() -> None:
    doc = " ".join(f"Sentence number {i} says something." for i in range(200))
    fitted = fit_document(doc, budget=100, count=estimate_tokens)
    assert fitted is not None
    text, cut = fitted
    assert cut and text.endswith("says something." + TRUNCATION_MARK)
    assert estimate_tokens(text) <= 100 and text.startswith("Sentence number 0 says")
    assert estimate_tokens(text) > 80  # the longest head that fits, not a tiny one


def test_a_document_that_fits_is_untouched_and_no_room_is_none() -> None:
    assert fit_document("Short.", budget=10, count=estimate_tokens) == ("Short.", False)
    assert fit_document("x " * 500, budget=MIN_DOCUMENT_TOKENS - 1, count=estimate_tokens) is None
