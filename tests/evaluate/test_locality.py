"""The locality split's paired counts (`clkt.evaluate.locality`) and how the job summary keeps them."""

from __future__ import annotations

from clkt.evaluate.locality import locality_counts
from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.summary import EntityKept, JobSummary, LocalityCounts


def _item(qid: int, lang: str, variant: Variant, correct: bool) -> ResultItem:
    return ResultItem(qid=qid, lang=lang, variant=variant, scorer="s", split="locality", predicted="A", correct=correct)


def test_locality_counts_pair_each_question_and_tally_entities() -> None:
    b, i = Variant.base, Variant.injected
    items = [
        _item(1, "en", b, True), _item(1, "en", i, True),  # kept (entity 10)
        _item(2, "en", b, True), _item(2, "en", i, False),  # lost (entity 10)
        _item(3, "en", b, False), _item(3, "en", i, True),  # gained (entity 20)
        _item(4, "en", b, True), _item(4, "en", i, True),  # kept (entity 20)
        _item(5, "en", b, True),  # no injected answer: not counted
        _item(9, "en", b, True), _item(9, "en", i, True),  # a qid of no locality entity: left out
        _item(1, "fr", b, False), _item(1, "fr", i, False),
    ]
    got = locality_counts(items, {1: 10, 2: 10, 3: 20, 4: 20, 5: 20})
    assert got == {"s": {
        "en": LocalityCounts(n=4, kept=2, lost=1, gained=1, entities=[EntityKept(entity=10, base_right=2, kept=1),
                                                                      EntityKept(entity=20, base_right=1, kept=1)]),
        "fr": LocalityCounts(n=1, kept=0, lost=0, gained=0, entities=[]),
    }}
    assert got["s"]["en"].base_right == 3


def test_the_summary_keeps_locality_only_when_there_is_some() -> None:
    plain = JobSummary(selection_scorer="s", scorers=["s"])
    assert "locality" not in plain.model_dump(mode="json") and "locality_questions" not in plain.model_dump(mode="json")
    counts = {"s": {"en": LocalityCounts(n=2, kept=1, lost=1, gained=0, entities=[EntityKept(entity=3, base_right=2, kept=1)])}}
    with_loc = plain.model_copy(update={"locality": counts, "locality_questions": 4})
    back = JobSummary.from_stored(with_loc.model_dump(mode="json"))
    assert back is not None and back.locality == counts and back.locality_questions == 4
