"""An open answer as the job records it (`clkt.openqa.results.scored_item`): the bad answers of issue 47 score as
the normaliser says, never right by accident, and what is kept of them is bounded."""

from __future__ import annotations

import pytest

from clkt.evaluate.results import Variant
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.results import (
    MAX_ANSWER_CHARS,
    OPEN_SCORER,
    UNSCORABLE,
    OpenResultItem,
    safely_scored_item,
    scored_item,
)
from clkt.openqa.score import Verdict

Q = ShortAnswerQuestion(
    qid="7", entity="Velmora Tide", fact="film.director", kind=AnswerKind.name,
    questions={"en": "Who directed the film Velmora Tide?", "ja": "映画Velmora Tideの監督は誰ですか？"},
    golds={"en": LangGold(answer="Osric Palandri"), "ja": LangGold(answer="オスリック・パランドリ")},
)


def _item(answer: str, lang: str = "en") -> OpenResultItem:
    return scored_item(Q, qid=7, entity_id=1, lang=lang, answer=answer, variant=Variant.injected, split="test")


@pytest.mark.parametrize(("answer", "verdict"), [
    ("", Verdict.NOT_ATTEMPTED),
    ("  \n\t ", Verdict.NOT_ATTEMPTED),
    ("Who directed the film Velmora Tide?", Verdict.NOT_ATTEMPTED),  # only the prompt echoed
    ("<b></b>", Verdict.NOT_ATTEMPTED),  # markup with nothing in it
    ("Osric Palandri " * 700, Verdict.INCORRECT),  # 10 KB on one line: not a short answer, though the gold is in it
])
def test_bad_answers_are_never_right(answer: str, verdict: Verdict) -> None:
    item = _item(answer)
    assert item.verdict is verdict and not item.correct
    assert len(item.answer) <= MAX_ANSWER_CHARS


def test_an_answer_in_another_script_is_counted_apart_never_right() -> None:
    item = _item("オスリック・パランドリ")  # the Japanese gold, to a question asked in English
    assert item.verdict is Verdict.INCORRECT and item.other_language and item.answer_lang == "ja"
    assert _item("オスリック・パランドリ", "ja").correct  # right in its own language


def test_a_right_answer_records_its_fact_scorer_and_variant() -> None:
    item = _item("Osric Palandri.\n")
    assert item.correct and item.fact == "film.director" and item.scorer == OPEN_SCORER
    assert item.variant is Variant.injected and not item.other_language


NUM = ShortAnswerQuestion(
    qid="8", entity="Velmora Tide", fact="film.budget", kind=AnswerKind.number,
    questions={"en": "How many tickets did Velmora Tide sell on its first day?"},
    golds={"en": LangGold(answer="120,000")},
)


@pytest.mark.parametrize("answer", [
    "1" * 40,  # a run of digits past the decimal context's 28 (it crashed a demo job's open pass)
    "9" * 3000,  # a runaway answer: one number of 3,000 digits
    "0." + "0" * 60 + "1",  # far below the gold's last significant figure
    "120000" + "0" * 30,
])
def test_numbers_of_any_length_are_scored_never_raise(answer: str) -> None:
    item = scored_item(NUM, qid=8, entity_id=1, lang="en", answer=answer, variant=Variant.injected, split="test")
    assert item.verdict is Verdict.INCORRECT and not item.correct


def test_a_long_number_equal_to_the_gold_still_matches() -> None:
    for answer in ("120,000", "120000.000000000000000000000000000000001", "about 120 thousand"):
        item = scored_item(NUM, qid=8, entity_id=1, lang="en", answer=answer, variant=Variant.injected, split="test")
        assert item.correct, answer


LONE_SURROGATE = "Osric \udfff"  # what no UTF-8 encoder takes: the language identifier raises on it


def test_an_answer_that_cannot_be_scored_is_recorded_unscorable_with_its_reason() -> None:
    with pytest.raises(UnicodeEncodeError):
        _item(LONE_SURROGATE)  # the crash a job's open pass met: one answer, the whole job failed
    item = safely_scored_item(Q, qid=7, entity_id=1, lang="en", answer=LONE_SURROGATE, variant=Variant.injected,
                              split="test")
    assert item.verdict == UNSCORABLE and not item.correct and not item.other_language
    assert item.reason.startswith("unscorable: UnicodeEncodeError") and item.answer == "Osric \\udfff"
    assert OpenResultItem.model_validate_json(item.model_dump_json()) == item  # it writes and reads back
    ok = safely_scored_item(Q, qid=7, entity_id=1, lang="en", answer="Osric Palandri", variant=Variant.injected,
                            split="test")
    assert ok == _item("Osric Palandri") and ok.correct  # a scorable answer: the scorer's own item
