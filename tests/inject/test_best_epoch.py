"""The best epoch: validation accuracy first, ties broken by the right option's mean score margin."""

from __future__ import annotations

import json
from pathlib import Path

from clkt.evaluate.results import ResultItem, Variant
from clkt.inject.best_epoch import ValScore, best_epoch, mean_margin


def _item(qid: int, raw: str, predicted: str = "A") -> ResultItem:
    return ResultItem(
        qid=qid, lang="en", variant=Variant.injected, scorer="option-loglik", split="val", predicted=predicted,
        correct=predicted == "A", raw=raw,
    )


def test_margin_is_right_minus_best_wrong() -> None:
    items = [_item(1, "A=-1.000 B=-3.000 C=-2.500 D=-9.000"), _item(2, "A=-4.000 B=-1.000 C=-2.000 D=-3.000", "B")]
    # question 1: -1 - (-2.5) = 1.5; question 2 (answer C): -2 - (-1) = -1
    assert mean_margin(items, {1: "A", 2: "C"}) == 0.25


def test_margin_is_none_without_per_option_scores() -> None:
    assert mean_margin([_item(1, "The answer is A.")], {1: "A"}) is None  # generate's completion
    assert mean_margin([_item(1, "A=-1.0 B=-2.0 C=-3.0 D=-4.0")], {}) is None  # no known answer
    assert mean_margin([], {1: "A"}) is None


def test_tied_accuracy_is_broken_by_margin_not_by_order() -> None:
    vals = {1: ValScore(3 / 7, 0.1), 2: ValScore(4 / 7, 0.2), 3: ValScore(4 / 7, 0.9), 4: ValScore(2 / 7, 2.0)}
    assert best_epoch(vals, 4) == 3  # epochs 2 and 3 tie on accuracy; 3 separates right from wrong options better


def test_accuracy_comes_before_margin() -> None:
    assert best_epoch({1: ValScore(0.5, 5.0), 2: ValScore(0.6, -1.0)}, 2) == 2


def test_earliest_when_margins_are_missing_or_equal() -> None:
    assert best_epoch({1: ValScore(0.5), 2: ValScore(0.5)}, 2) == 1  # generate: no margin
    assert best_epoch({1: ValScore(0.5, 1.0), 2: ValScore(0.5, 1.0)}, 2) == 1
    assert best_epoch({1: ValScore(0.5, None), 2: ValScore(0.5, 3.0)}, 2) == 1  # one epoch without a margin: no mixing
    assert best_epoch({}, 3) == 3 and best_epoch({1: ValScore(None), 2: ValScore(None)}, 2) == 2


def test_val_file_of_an_older_job_reads_without_margin(tmp_path: Path) -> None:
    f = tmp_path / "val.json"
    f.write_text(json.dumps({"epoch": 1, "scorer": "option-loglik", "accuracy": 0.5, "n": 4}))
    assert ValScore.from_file(f) == ValScore(0.5, None)
