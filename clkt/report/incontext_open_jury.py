"""The jury's figure on the in-context short answers (`clkt.report.incontext_open`), beside the normaliser's in each
cell (document language, question language), never merged with it.

Where the daemon's `open-jury` stage has graded the in-context short answers (`storage.incontext_open_judgements`),
a cell's jury figure stands on the answers of the normaliser's cell (those it graded: UNSCORABLE and skipped ones
are in neither) that the jury decided: n, the entities, CORRECT / n (SimpleQA's rule: an undecided answer, no
strict majority, is in n and not right), its 95% interval from the same entity draws as the normaliser's, and *too
few* under the same rule. An answer the jury has not graded yet, or whose failed vote left it without a verdict
(`InContextJuryRow.decided`: the stage tries it again), is counted as pending and in no figure, never filled in by
the normaliser's verdict (the parametric report's rule: `clkt.report.open_jury`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from clkt.report.basics import ci1_text
from clkt.report.clustered import EntityDraws, accuracy_interval
from clkt.report.metric_table import open_too_few
from storage.incontext_open import InContextOpenRecord
from storage.incontext_open_judgements import InContextJuryRow

__all__ = ["InContextJuryCell", "JuryKey", "jury_by_key", "jury_cell", "jury_cell_text"]

JuryKey = tuple[str, int, str, str]  # target, open qid, document language, question language


class InContextJuryCell(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int  # answers of the cell the jury decided
    entities: int
    correct: int
    undecided: int  # no strict majority (in n, not right)
    pending: int  # answers of the cell not graded yet, or left without a verdict by a failed vote (in no figure)
    too_few: bool
    accuracy: float | None  # None when too few
    ci: tuple[float, float] | None = None


def jury_by_key(jury: Sequence[InContextJuryRow]) -> dict[JuryKey, InContextJuryRow]:
    return {(j.target, j.open_qid, j.context_lang, j.lang): j for j in jury}


def jury_cell(
    rows: Sequence[InContextOpenRecord], jury: Mapping[JuryKey, InContextJuryRow], draws: EntityDraws,
) -> InContextJuryCell:
    """The jury's figure on one cell's graded answers `rows` (see the module); too few by the normaliser cell's
    rule (`open_too_few`)."""
    decided: list[tuple[InContextOpenRecord, InContextJuryRow]] = []
    for r in rows:
        j = jury.get((r.target, r.open_qid, r.context_lang, r.lang))
        if j is not None and j.decided:
            decided.append((r, j))
    right = [(j.verdict == "CORRECT", r.entity_id) for r, j in decided]
    n, ents, k = len(decided), len({r.entity_id for r, _ in decided}), sum(c for c, _ in right)
    few = open_too_few(n=n, entities=ents)
    return InContextJuryCell(
        n=n, entities=ents, correct=k, undecided=sum(j.verdict is None for _, j in decided), pending=len(rows) - n,
        too_few=few, accuracy=None if few else k / n, ci=None if few else accuracy_interval(right, draws),
    )


def jury_cell_text(j: InContextJuryCell | None) -> str:
    """`75.0 [60.0, 90.0] (n 20)`, `too few (n 3)`, with `, 2 pending` where answers wait; `–` without a jury."""
    if j is None:
        return "–"
    pending = f", {j.pending} pending" if j.pending else ""
    if j.accuracy is None:
        return f"too few (n {j.n}{pending})"
    return f"{100 * j.accuracy:.1f}{ci1_text(j.ci)} (n {j.n}{pending})"
