"""Which epoch's checkpoint a job keeps: the best validation accuracy, ties broken by the right option's margin.

After each epoch the job answers the train language's validation questions with the selection scorer and
writes `val.json` beside the checkpoint (`ValScore`), so a rerun reads the epochs it already validated.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from clkt.evaluate.results import ResultItem

__all__ = ["ValScore", "best_epoch", "mean_margin"]


@dataclass(frozen=True, slots=True)
class ValScore:
    """One epoch on the validation questions: accuracy, and the mean log-likelihood margin of the right option."""

    accuracy: float | None  # None: no validation questions
    margin: float | None = None  # None: the scorer gives no per-option scores (generate), or an older val.json

    @classmethod
    def from_file(cls, path: Path) -> ValScore:
        d = json.loads(path.read_text())
        return cls(d["accuracy"], d.get("margin"))


def mean_margin(items: list[ResultItem], answers: dict[int, str]) -> float | None:
    """Mean over questions of (score of the right option - best score of a wrong one), from the per-option
    scores in `raw` (`option-loglik`, `letter-logprob`: "A=-1.234 B=..."); None when a row has none."""
    margins: list[float] = []
    for it in items:
        scores: dict[str, float] = {}
        for part in it.raw.split():
            letter, sep, value = part.partition("=")
            try:
                scores[letter] = float(value) if sep else float("nan")
            except ValueError:
                return None
        right = answers.get(it.qid)
        if right not in scores or len(scores) < 2 or any(math.isnan(v) for v in scores.values()):
            return None
        margins.append(scores[right] - max(v for k, v in scores.items() if k != right))
    return sum(margins) / len(margins) if margins else None


def best_epoch(vals: dict[int, ValScore], last: int) -> int:
    """The epoch with the best validation accuracy; among equal accuracies (7 to 15 validation questions tie
    often) the one with the larger mean margin of the right option, then the earliest. The last epoch when
    nothing was validated."""
    scored = {e: v for e, v in vals.items() if v.accuracy is not None}
    if not scored:
        return last
    top = max(v.accuracy for v in scored.values() if v.accuracy is not None)
    tied = {e: v for e, v in scored.items() if v.accuracy == top}
    margins = {e: v.margin for e, v in tied.items() if v.margin is not None}
    if len(margins) == len(tied) and len(tied) > 1:
        best_margin = max(margins.values())
        return min(e for e, m in margins.items() if m == best_margin)
    return min(tied)
