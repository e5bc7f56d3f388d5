"""A job's Learn summary: the train language's paired base/injected answers, per result scorer."""

from __future__ import annotations

import pytest

from clkt.evaluate.results import CONTROL_SPLIT, ResultItem, Variant
from clkt.inject.job import learn_summaries


def _r(qid: int, lang: str, variant: Variant, correct: bool, *, scorer: str = "option-loglik", split: str = "test") -> ResultItem:
    return ResultItem(qid=qid, lang=lang, variant=variant, scorer=scorer, split=split, predicted="A", correct=correct)


def test_learn_summary_pairs_the_train_language_per_scorer() -> None:
    items: list[ResultItem] = []
    for q in range(12):
        items += [_r(q, "en", Variant.base, False), _r(q, "en", Variant.injected, True)]  # 12 gained
        items += [_r(q, "fr", Variant.base, True), _r(q, "fr", Variant.injected, False)]  # other language: ignored
        items += [_r(q, "en", Variant.base, q < 6, scorer="generate"), _r(q, "en", Variant.injected, q < 6, scorer="generate")]
    items.append(_r(99, "en", Variant.injected, True))  # unpaired: ignored
    s = learn_summaries(items, "en")
    assert s["option-loglik"].n == 12 and s["option-loglik"].gained == 12
    assert s["option-loglik"].p_value == pytest.approx(2 * 0.5**12) and s["option-loglik"].learned is True
    assert s["generate"].gain == 0 and s["generate"].p_value == 1.0 and s["generate"].learned is False
    ctrl = learn_summaries([r.model_copy(update={"split": CONTROL_SPLIT}) for r in items], "en")
    assert ctrl["option-loglik"].n == 12
    assert learn_summaries([], "en") == {}
