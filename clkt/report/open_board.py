"""The open track on the leaderboard (issue 47): the short-answer rows apart from the multiple-choice ones.

A job's commit packs its open answers (the test split) as a result pack of the normaliser layer's scorer
(`open-normaliser`, `storage.open_results`), so the leaderboard pools them exactly as it pools an MCQ scorer's
pack: the same rows (`clkt.report.leaderboard.build_rows`), the same metric table (Learn, Overall, Transfer,
`clkt.report.metric_table`), the same bootstrap over entities, the same "too few" rules. What this module adds:

- **the jury layer's rows**: where the daemon's `open-jury` stage has graded the window's answers
  (`storage.open_judgements`), `with_open_track` packs the jury's verdicts as a pack of their own scorer
  (`open-jury`, `JURY_SCORER`) beside the normaliser's, on the same questions and entities (its entity rows are
  the normaliser pack's): an answer the jury left undecided is not right (SimpleQA's rule, as in the report's
  jury figure), one it has not graded yet is not in the pack (never filled in by the normaliser's verdict);
- **the control split and locality** (`with_open_track`, `open_splits`): each job's open control tallies and
  locality counts per layer, made from its stored answers of those splits (the report's one source too:
  `clkt.report.open_control`, `clkt.report.open_locality`), which the row pools as it pools the MCQ locality
  (`control`, `kept`: n and the interval over entities, the "too few" rule);
- **the split** (`split_rows`): the board's `rows` are the multiple-choice scorers' (ranked, compared), its
  `open_rows` the open layers' (ranked within strategy x layer, never pooled or compared with an MCQ row);
- **each figure's layer** (`layer_of`): "normaliser" or "jury", the name every view shows beside the scorer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from clkt.evaluate.results import CONTROL_SPLIT, LOCALITY_SPLIT
from clkt.openqa.results import OPEN_SCORER
from clkt.report.open_control import control_tallies
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_locality import locality_tallies
from clkt.report.open_right import Right, jury_right, normaliser_right
from storage.leaderboard import retracted_questions
from storage.open_judgements import JuryRow, jury_rows_for_snapshot
from storage.open_results import OpenResultRow, open_results_for_jobs
from storage.result_packs import PackedAnswer, ResultPackRecord, build_packs

if TYPE_CHECKING:
    from clkt.report.leaderboard_data import LeaderRow
    from storage.engine import Session
    from storage.leaderboard import WindowData

__all__ = ["OPEN_LAYERS", "is_open", "jury_packs", "layer_of", "mcq_locality", "open_splits", "split_rows", "with_open_track"]

OPEN_LAYERS = {OPEN_SCORER: "normaliser", JURY_SCORER: "jury"}  # the open track's scorers and their layers' names


def is_open(scorer: str) -> bool:
    """Whether `scorer` is one of the open track's layers (its rows are never pooled with an MCQ scorer's)."""
    return scorer in OPEN_LAYERS


def mcq_locality(locality: Mapping[str, Any] | None) -> dict[str, Any]:
    """A job's locality counts (scorer -> ...) without the open layers': theirs name public entity ids already (no
    store row to look up: a public id is wider than the store's entity ids)."""
    return {k: v for k, v in (locality or {}).items() if not is_open(k)}


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
        if j.scorer == OPEN_SCORER and j.variant in ("base", "injected") and j.decided:
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


def open_splits(data: WindowData, rows: Sequence[OpenResultRow], jury: Sequence[JuryRow]) -> WindowData:
    """`data` with each job's open locality counts and control tallies per layer (the normaliser's; the jury's where
    it graded) made from the stored answers `rows` of those splits: the one source of the report's figures too (any
    open layer's counts a job's summary kept are dropped)."""
    layers: list[tuple[Right, str | None]] = [(normaliser_right, None)] + ([(jury_right(jury), JURY_SCORER)] if jury else [])
    locality: dict[int, dict[str, Any]] = defaultdict(dict)
    control: dict[int, dict[str, Any]] = defaultdict(dict)
    for right, scorer in layers:
        for job, per in locality_tallies(rows, right=right, scorer=scorer).items():
            locality[job].update({k: {lang: c.model_dump(mode="json") for lang, c in v.items()} for k, v in per.items()})
        for job, tallies in control_tallies(rows, right=right, scorer=scorer).items():
            control[job].update({k: t.model_dump(mode="json") for k, t in tallies.items()})
    jobs = tuple(replace(j, locality={**mcq_locality(j.locality), **locality.get(j.id, {})},
                         control=control.get(j.id, {})) for j in data.jobs)
    return replace(data, jobs=jobs)


async def with_open_track(session: Session, data: WindowData, *, only: bool = False) -> WindowData:
    """`data` with the jury's packs beside the normaliser's (`jury_packs`; the jury's verdicts read per snapshot of
    the window) and the open jobs' control and locality figures from their stored answers (`open_splits`; a retracted
    question left out, as from the packs); `only`: the jury's packs in place of every other (`--scorer open-jury`)."""
    normaliser = [p for p in data.packs if p.scorer == OPEN_SCORER]
    if not normaliser:
        return replace(data, packs=()) if only else data
    jury = [j for s in data.snapshots for j in await jury_rows_for_snapshot(session, s.id)]
    packs = jury_packs(normaliser, jury)
    jobs = sorted({p.job_id for p in normaliser})
    rows = [r for split in (CONTROL_SPLIT, LOCALITY_SPLIT) for r in await open_results_for_jobs(session, jobs, split=split)]
    retracted = await retracted_questions(session, [s.id for s in data.snapshots])
    snapshot_of = {j.id: j.snapshot_id for j in data.jobs}
    rows = [r for r in rows if r.open_qid not in retracted.get(snapshot_of.get(r.job_id, ""), frozenset())]
    return open_splits(replace(data, packs=tuple(packs) if only else (*data.packs, *packs)), rows, jury)
