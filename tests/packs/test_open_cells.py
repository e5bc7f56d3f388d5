"""A pack's open cells under the one "too few" rule of every open-answer cell (`clkt.report.metric_table.open_too_few`,
the in-context short answers' and the open control's): under `MIN_CELL_N` graded answers, or about one entity, a cell
keeps its counts and shows no rate and no interval, in metrics.json and in `clkt submit`'s lines alike."""

from __future__ import annotations

from typing import Any, Literal

from clkt.cli.submit import open_lines
from clkt.evaluate.results import Variant
from clkt.openqa.results import UNSCORABLE
from clkt.openqa.score import Verdict
from clkt.packs.format import FORMAT_VERSION
from clkt.packs.open_answers import ScoredOpenAnswer
from clkt.packs.open_metrics import open_metrics
from clkt.report.metric_table import MIN_CELL_N, open_too_few


def _answers(lang: str, *, n: int, entities: int, right: int, unscorable: int = 0) -> list[ScoredOpenAnswer]:
    """`n` graded injected answers in `lang` spread over `entities` entities, the first `right` of them CORRECT, and
    `unscorable` more."""
    out = []
    for i in range(n + unscorable):
        verdict: Verdict | Literal["UNSCORABLE"] = (
            UNSCORABLE if i >= n else (Verdict.CORRECT if i < right else Verdict.INCORRECT))
        out.append(ScoredOpenAnswer(train_lang="en", qid=1000 + i, entity_id=100 + i % entities, lang=lang,
                                    variant=Variant.injected, split="test", verdict=verdict, answer="x"))
    return out


def _cells(items: list[ScoredOpenAnswer]) -> dict[str, dict[str, Any]]:
    got = open_metrics(items, ["en"], ["en", "fr", "de"], snapshot_id="snap", format_version=FORMAT_VERSION, samples=200)
    assert got is not None
    return {c.lang: c.model_dump(mode="json") for c in got.cells}


def test_a_cell_at_the_minimum_over_two_entities_shows_its_rate_and_interval() -> None:
    cells = _cells(_answers("en", n=MIN_CELL_N, entities=2, right=7, unscorable=3))
    en = cells["en"]
    assert (en["n"], en["correct"], en["too_few"], en["accuracy"], en["unscorable"]) == (MIN_CELL_N, 7, False, 0.7, 3)
    assert en["ci"] is not None and en["ci"][0] <= 0.7 <= en["ci"][1]


def test_under_the_minimum_or_one_entity_a_cell_is_too_few_with_its_counts_and_no_rate() -> None:
    items = [*_answers("en", n=MIN_CELL_N - 1, entities=3, right=9),
             *_answers("fr", n=4 * MIN_CELL_N, entities=1, right=30),  # many answers, one entity: no spread to draw
             *_answers("de", n=MIN_CELL_N - 1, entities=3, right=0, unscorable=5)]  # unscorable ones never count
    cells = _cells(items)
    for lang, (n, right, entities) in {"en": (9, 9, 3), "fr": (40, 30, 1), "de": (9, 0, 3)}.items():
        c = cells[lang]
        assert (c["n"], c["correct"], c["entities"]) == (n, right, entities)
        assert (c["too_few"], c["accuracy"], c["ci"]) == (True, None, None)
        assert open_too_few(n=n, entities=entities)  # the one rule, the in-context cells' and the control's


def test_submit_lines_say_too_few_with_the_counts_and_a_rate_only_where_there_is_one() -> None:
    items = [*_answers("en", n=12, entities=4, right=9), *_answers("fr", n=3, entities=3, right=2)]
    m = open_metrics(items, ["en"], ["en", "fr"], snapshot_id="snap", format_version=FORMAT_VERSION, samples=200)
    (line,) = [x for x in open_lines(m, here="here") if "trained in en, injected" in x]
    en, fr = line.split(": ", 1)[1].split("; ")
    assert en.startswith("en 75.0 % [") and en.endswith("(n=12, 4 entities)")
    assert fr == "fr too few (2 of n=3 right, 3 entities)"
