"""Which stored open answers a scoring layer counts right (issue 47): the one rule the open track's split figures
(control, `clkt.report.open_control`; locality, `clkt.report.open_locality`) read, in the report and on the board.

A layer is a function of a stored answer (`storage.open_results.OpenResultRow`, the normaliser's verdict on it):
True (right), False (not right) or None (the layer has no verdict on it: the answer is in no pair of that layer's
figures, never filled in by another layer's verdict).

- **the normaliser** (`normaliser_right`): CORRECT is right; an answer it could not score (not one of `GRADES`,
  e.g. UNSCORABLE) has no verdict, as it is in no figure of the track;
- **the jury** (`jury_right`): its stored verdict of the same answer (`storage.open_judgements.JuryRow`, keyed like
  the answer): CORRECT is right, an undecided one (no strict majority, or the question not found) is not right
  (SimpleQA's rule: never guessed), an answer it has not graded yet has none, nor one whose failed vote left it
  without a verdict (`JuryRow.decided`: the stage tries it again). An answer the normaliser could not
  score has none either: the jury's figures stand on the answers the normaliser's stand on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from storage.open_judgements import JuryRow
from storage.open_results import GRADES, OpenResultRow

__all__ = ["Right", "jury_right", "normaliser_right"]

Right = Callable[[OpenResultRow], bool | None]


def normaliser_right(r: OpenResultRow) -> bool | None:
    return r.correct if r.verdict in GRADES else None


def jury_right(jury: Sequence[JuryRow]) -> Right:
    """The jury layer over its stored verdicts `jury` (the jury's rows, as `jury_rows_for_snapshot` reads them)."""
    verdicts = {(j.job_id, j.open_qid, j.lang, j.variant, j.scorer): j.verdict for j in jury if j.decided}

    def right(r: OpenResultRow) -> bool | None:
        key = (r.job_id, r.open_qid, r.lang, r.variant, r.scorer)
        if r.verdict not in GRADES or key not in verdicts:
            return None
        return verdicts[key] == "CORRECT"

    return right
