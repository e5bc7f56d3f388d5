"""The open track's predictions (issue 47) as the exports carry them: every stored open answer, one row each.

The MCQ predictions (the leaderboard's `--predictions` CSV, `clkt.report.window.write_predictions`; a publish
revision's `predictions/<job>.jsonl`, `clkt.publish.tree`) carry letters; an open answer is a text with a verdict,
so it has rows of its own, in the same two forms: `open_predictions/<job>.jsonl` in a publish revision and the
leaderboard's `--open-predictions FILE.csv` (`write_open_predictions`; the web page's `open-predictions.csv` has the
same rows). A row (`OpenPrediction`) is the stored
`open_result` row (`storage.open_results`) with its public ids (`qid` is the open question's
`clkt.snapshots.ids.stable_open_qid`, `entity_id` the entity's): the language asked, the split, base or injected,
the answer as stored (cut to `clkt.openqa.results.MAX_ANSWER_CHARS`), the scorer's verdict, its reason, the
language identified in the answer and `other_language` (answered in another language: INCORRECT, counted apart).
Each row ends with the jury's columns (`clkt.report.open_verdicts.JuryColumns`: `jury_status`, the majority
`jury_verdict`, each judge's vote, the judge prompt's version and the jury's cost), blank where the jury has not
graded the answer; the columns before them are the ones the exports always had, in the same order.
The leaderboard's file leaves out, as its MCQ file does, the answers about entities a target recognised, and
the answers of a scorer other than the one asked for (`--scorer`; `open-jury`: the normaliser's answers that the
jury has a row of, graded or failed).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from clkt.openqa.results import OPEN_SCORER
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_verdicts import NOT_GRADED, AnswerKey, JuryColumns, answer_key, jury_columns
from clkt.report.window import public_entity_ids, resolve_window
from storage.engine import Store
from storage.open_judgements import jury_rows_for_snapshot
from storage.open_results import OpenResultRow, open_results_for_jobs

__all__ = ["OPEN_CSV_COLUMNS", "OpenPrediction", "open_prediction", "open_prediction_cells", "write_open_predictions"]


class _OpenAnswer(BaseModel):
    """The columns of an open answer the exports always had (their order kept: the jury's come after them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    qid: int  # public (`stable_open_qid`)
    entity_id: int  # public (`stable_entity_id`)
    domain: str
    fact: str  # the fact slot asked ("film.director")
    lang: str  # the language the question was asked in
    split: str  # "test" | "control"
    model: str
    strategy: str
    train_lang: str
    seed: int
    variant: str  # "base" | "injected"
    scorer: str  # "open-normaliser"
    verdict: str  # CORRECT | INCORRECT | NOT_ATTEMPTED
    correct: bool  # verdict == CORRECT
    other_language: bool  # answered in another language (INCORRECT, counted apart)
    answer_lang: str | None  # the language identified in the answer (None: none identified, or stored before it was kept)
    answer: str  # as stored: cut to MAX_ANSWER_CHARS
    reason: str  # the scorer's reason for its verdict (empty: stored before it was kept)


class OpenPrediction(JuryColumns, _OpenAnswer):
    """One stored open answer of a finished job (the published JSONL row; the CSV adds the snapshot and job ids): the
    answer's columns, then the jury's (`JuryColumns`; pydantic orders the fields of the last base first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


OPEN_CSV_COLUMNS = ("snapshot_id", "job_id", *OpenPrediction.model_fields)


def open_prediction(r: OpenResultRow, jury: Mapping[AnswerKey, JuryColumns] | None = None) -> OpenPrediction:
    """The exported row of a stored answer, with the jury's columns from `jury` (`jury_columns`; none: not graded)."""
    graded = (jury or {}).get(answer_key(r.job_id, r.open_qid, r.lang, r.variant, r.scorer), JuryColumns())
    return OpenPrediction(
        qid=r.open_qid, entity_id=r.entity_id, domain=r.domain, fact=r.fact, lang=r.lang, split=r.split,
        model=r.target_model, strategy=r.strategy, train_lang=r.train_lang, seed=r.seed, variant=r.variant,
        scorer=r.scorer, verdict=r.verdict, correct=r.correct, other_language=r.other_language,
        answer_lang=r.answer_lang, answer=r.answer, reason=r.reason, **dict(graded),
    )


def _cells(snapshot_id: str, job_id: int, p: OpenPrediction) -> list[str]:
    """A CSV row: booleans 1 or 0, no value an empty cell, the judges' votes a JSON list (none: empty), every cell
    neutralised against spreadsheet formulas (an answer is generated text)."""
    from clkt.snapshots.audit import neutralise_cell  # the audit CSVs' rule (imported here: it pulls jinja2 in)

    values = {"snapshot_id": snapshot_id, "job_id": job_id, **p.model_dump()}
    values["jury_votes"] = json.dumps(values["jury_votes"], ensure_ascii=False, separators=(",", ":")) if p.jury_votes else None
    return [neutralise_cell(int(v) if isinstance(v, bool) else "" if v is None else v)
            for v in (values[c] for c in OPEN_CSV_COLUMNS)]


async def open_prediction_cells(store: Store, q: LeaderboardQuery) -> list[list[str]]:
    """The CSV rows (`OPEN_CSV_COLUMNS`, no header) of the open answers of the leaderboard window's jobs, the split
    asked of the MCQ file (test) only: the `--open-predictions` file's and the web page's download."""
    w = await resolve_window(store, q)
    jobs = {j.id: j for j in w.data.jobs
            if (j.snapshot_id, j.target) in w.data.ready and (not q.targets or j.target in q.targets)}
    by_jury = q.scorer == JURY_SCORER  # the jury grades the normaliser's answers: theirs, where it has a row
    async with store.session() as s:
        rows = await open_results_for_jobs(s, sorted(jobs), split="test", scorer=OPEN_SCORER if by_jury else q.scorer)
        excluded = await public_entity_ids(s, {e for ids in w.data.exclusions.values() for e in ids})
        jury = jury_columns([j for sid in sorted({j.snapshot_id for j in jobs.values()})
                             for j in await jury_rows_for_snapshot(s, sid, votes=True)])
    public_excl = {key: frozenset(excluded[e] for e in ids if e in excluded) for key, ids in w.data.exclusions.items()}
    out = [(r.job_id, open_prediction(r, jury)) for r in rows
           if r.entity_id not in public_excl.get((jobs[r.job_id].snapshot_id, jobs[r.job_id].target), frozenset())]
    return [_cells(jobs[i].snapshot_id, i, p) for i, p in out if not by_jury or p.jury_status != NOT_GRADED]


async def write_open_predictions(store: Store, q: LeaderboardQuery, path: Path) -> int:
    """The open answers of the leaderboard window's jobs as CSV (`open_prediction_cells`); how many rows. Written to
    a temporary file beside `path`, then renamed: a failure leaves no half-written file."""
    return _write_csv(path, await open_prediction_cells(store, q))


def _write_csv(path: Path, rows: Sequence[list[str]]) -> int:
    tmp = path.with_name(path.name + ".part")
    try:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(OPEN_CSV_COLUMNS)
            out.writerows(rows)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return len(rows)
