"""The open track on the leaderboard (issue 47): the short-answer rows apart from the multiple-choice ones.

A job's commit packs its open answers (the test split) as a result pack of the normaliser layer's scorer
(`open-normaliser`, `storage.open_results`), so the leaderboard pools them exactly as it pools an MCQ scorer's
pack: the same rows (`clkt.report.leaderboard.build_rows`), the same metric table (Learn, Overall, Transfer,
`clkt.report.metric_table`), the same bootstrap over entities, the same "too few" rules. What this module adds:

- **the jury layer's rows**: where the daemon's `open-jury` stage has graded the window's answers
  (`storage.open_judgements`), `with_jury_packs` packs the jury's verdicts as a pack of their own scorer
  (`open-jury`, `JURY_SCORER`) beside the normaliser's, on the same questions and entities (its entity rows are
  the normaliser pack's): an answer the jury left undecided is not right (SimpleQA's rule, as in the report's
  jury figure), one it has not graded yet is not in the pack (never filled in by the normaliser's verdict);
- **the split** (`split_rows`): the board's `rows` are the multiple-choice scorers' (ranked, compared), its
  `open_rows` the open layers' (ranked within strategy x layer, never pooled or compared with an MCQ row);
- **each figure's layer** (`layer_of`): "normaliser" or "jury", the name every view shows beside the scorer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from clkt.openqa.results import OPEN_SCORER
from clkt.report.open_jury import JURY_SCORER
from storage.open_judgements import JuryRow, jury_rows_for_snapshot
from storage.result_packs import PackedAnswer, ResultPackRecord, build_packs

if TYPE_CHECKING:
    from clkt.report.leaderboard_data import LeaderRow
    from storage.engine import Session
    from storage.leaderboard import WindowData

__all__ = ["OPEN_LAYERS", "is_open", "jury_packs", "layer_of", "split_rows", "with_jury_packs"]

OPEN_LAYERS = {OPEN_SCORER: "normaliser", JURY_SCORER: "jury"}  # the open track's scorers and their layers' names


def is_open(scorer: str) -> bool:
    """Whether `scorer` is one of the open track's layers (its rows are never pooled with an MCQ scorer's)."""
    return scorer in OPEN_LAYERS


def layer_of(scorer: str) -> str:
    return OPEN_LAYERS.get(scorer, scorer)


def split_rows(rows: Iterable[LeaderRow]) -> tuple[list[LeaderRow], list[LeaderRow]]:
    """`rows` as (the multiple-choice scorers', the open layers'), order kept."""
    mcq: list[LeaderRow] = []
    opened: list[LeaderRow] = []
    for r in rows:
        (opened if is_open(r.scorer) else mcq).append(r)
    return mcq, opened


def jury_packs(packs: Sequence[ResultPackRecord], jury: Sequence[JuryRow]) -> list[ResultPackRecord]:
    """The jury's verdicts on the answers of the normaliser's `packs`, as packs of `JURY_SCORER` (one per job that
    has a graded answer): the same questions and entity rows, a question answered where the jury graded it, right
    where its verdict is CORRECT."""
    by_job: dict[int, list[JuryRow]] = defaultdict(list)
    for j in jury:
        if j.scorer == OPEN_SCORER and j.variant in ("base", "injected"):
            by_job[j.job_id].append(j)
    out: list[ResultPackRecord] = []
    for p in packs:
        if p.scorer != OPEN_SCORER or p.job_id not in by_job:
            continue
        entity = dict(zip(np.frombuffer(p.question_ids, dtype="<i8").tolist(),
                          np.frombuffer(p.entity_ids, dtype="<i8").tolist(), strict=True))
        out += build_packs(p.job_id, (
            PackedAnswer(question_id=j.open_qid, entity_id=entity[j.open_qid], lang=j.lang, variant=j.variant,
                         scorer=JURY_SCORER, correct=j.verdict == "CORRECT")
            for j in by_job[p.job_id] if j.open_qid in entity
        ))
    return out


async def with_jury_packs(session: Session, data: WindowData, *, only: bool = False) -> WindowData:
    """`data` with the jury's packs beside the normaliser's (`jury_packs`; the jury's verdicts read per snapshot of
    the window); `only`: the jury's packs in place of every other (`--scorer open-jury`)."""
    normaliser = [p for p in data.packs if p.scorer == OPEN_SCORER]
    if not normaliser:
        return replace(data, packs=()) if only else data
    jury = [j for s in data.snapshots for j in await jury_rows_for_snapshot(session, s.id)]
    packs = jury_packs(normaliser, jury)
    return replace(data, packs=tuple(packs) if only else (*data.packs, *packs))
