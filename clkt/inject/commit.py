"""A finished GPU job's commit: its outcome read back, its results and typed summary stored in ONE transaction
with the job's completion (fenced on the lease), then the commit hook.

The child reports the export's public qids; they are mapped back to this store's question rows through the
snapshot's items (an unknown qid fails the job for good). The summary (`clkt.evaluate.summary.JobSummary`) is
stored completed with the epochs, the target's identity, the control split's counts and where it ran.

After a commit the consumer calls its `CommitHook` (wired in `clkt.services`: the retention of the job's folder,
`clkt.retention.apply.after_job_commit`); inject does not know what the hook does.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from pydantic import ValidationError

from clkt.config import TargetSettings
from clkt.errors import JobError, SnapshotError
from clkt.evaluate.results import ResultItem
from clkt.evaluate.summary import ControlCounts, JobSummary
from clkt.inject.contract import JobOutcome, JobSpec
from clkt.layout import OUTCOME_FILE
from clkt.snapshots.content import load_item_refs
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, complete_gpu_job, write_job_results
from storage.open_results import OpenResultRecord, write_open_results

__all__ = ["CommitError", "CommitHook", "Committed", "commit_outcome", "completed_summary", "control_counts", "open_records",
           "result_records"]


class CommitHook(Protocol):
    """Called after each job's commit, with the store and the job's id; must not raise (the job is committed)."""

    def __call__(self, store: Store, *, job_id: int) -> Awaitable[object]: ...


class CommitError(JobError):
    """The outcome cannot be stored: `permanent` when retrying cannot fix it (results naming unknown questions)."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True, slots=True)
class Committed:
    outcome: JobOutcome
    results: int  # rows written


def result_records(outcome: JobOutcome, rows_by_qid: dict[int, int], *, snapshot_id: str) -> list[ResultRecord]:
    """The outcome's results keyed by this store's question rows (`rows_by_qid`: public qid -> Question.id)."""
    unknown = sorted({r.qid for r in outcome.results if r.qid not in rows_by_qid})
    if unknown:
        shown = ", ".join(map(str, unknown[:5])) + (f" (+{len(unknown) - 5} more)" if len(unknown) > 5 else "")
        raise JobError(
            f"the results name {len(unknown)} qid(s) that are not items of snapshot {snapshot_id}: {shown} "
            "(was the export folder replaced by another snapshot's?)"
        )
    return [
        ResultRecord(
            question_id=rows_by_qid[r.qid], lang=r.lang, variant=r.variant.value, scorer=r.scorer, split=r.split,
            predicted=r.predicted, correct=r.correct, raw=r.raw,
        )
        for r in outcome.results
    ]


def open_records(outcome: JobOutcome) -> list[OpenResultRecord]:
    """The outcome's open answers (the open track: public ids, both splits) as the store's `open_result` rows."""
    return [
        OpenResultRecord(open_qid=r.qid, entity_id=r.entity_id, domain=r.domain, fact=r.fact, lang=r.lang,
                         variant=r.variant.value, scorer=r.scorer, split=r.split, verdict=str(r.verdict),
                         other_language=r.other_language, answer=r.answer, answer_lang=r.answer_lang, reason=r.reason)
        for r in outcome.open_results
    ]


def control_counts(items: list[ResultItem]) -> dict[str, dict[str, ControlCounts]]:
    """The control split's answers as counts: scorer -> test language -> n, base_correct, injected_correct,
    gained (base wrong, injected right) and lost (base right, injected wrong), over the questions that have
    both answers. They go into the job summary's `control`: control questions have no store rows."""
    pairs: dict[tuple[str, str, int], dict[str, bool]] = {}
    for r in items:
        pairs.setdefault((r.scorer, r.lang, r.qid), {})[r.variant.value] = r.correct
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (scorer, lang, _), v in sorted(pairs.items()):
        if "base" not in v or "injected" not in v:
            continue
        c = out.setdefault(scorer, {}).setdefault(lang, dict.fromkeys(("n", "base_correct", "injected_correct", "gained", "lost"), 0))
        b, i = v["base"], v["injected"]
        c["n"] += 1
        c["base_correct"] += b
        c["injected_correct"] += i
        c["gained"] += (not b) and i
        c["lost"] += b and not i
    return {scorer: {lang: ControlCounts(**c) for lang, c in langs.items()} for scorer, langs in out.items()}


def completed_summary(outcome: JobOutcome, target: TargetSettings, *, ran_on: str | None = None) -> JobSummary:
    """The job's summary as stored: what the job measured, with its epochs, the target's identity, the
    control split's counts and where it ran."""
    return outcome.summary.model_copy(update={
        "epochs": list(outcome.epochs), "target_family": target.family, "target_size_b": target.size_b,
        "target_model_id": target.model, "control": control_counts(outcome.control_results) if outcome.control_results else {},
        "ran_on": ran_on or outcome.summary.ran_on,
    })


def read_outcome(spec: JobSpec) -> JobOutcome:
    try:
        return JobOutcome.model_validate_json((spec.artifacts_dir / OUTCOME_FILE).read_bytes())
    except (OSError, ValidationError) as e:
        raise CommitError(f"unreadable outcome file: {e}", permanent=False) from e


async def commit_outcome(store: Store, spec: JobSpec, *, owner: str, ran_on: str | None = None) -> Committed:
    """Store the outcome the job left in its folder and complete the job, in one transaction fenced on `owner`'s
    lease (`LeaseLost` when it is gone: nothing is written); `CommitError` when the outcome cannot be stored."""
    outcome = read_outcome(spec)
    try:
        async with store.session() as s:
            items = await load_item_refs(s, spec.snapshot_id)
        rows_by_qid = {it.qid: it.question_row for it in items}
        records = result_records(outcome, rows_by_qid, snapshot_id=spec.snapshot_id)
    except (JobError, SnapshotError) as e:
        raise CommitError(str(e), permanent=True) from e
    summary = completed_summary(outcome, spec.target, ran_on=ran_on)
    async with store.transaction() as s:
        n = await write_job_results(s, spec.job_id, records)
        await write_open_results(s, spec.job_id, open_records(outcome),
                                 entity_rows={it.entity_id: it.entity_row for it in items})
        await complete_gpu_job(
            s, spec.job_id, owner=owner, best_epoch=outcome.best_epoch, device=outcome.device,
            artifacts_dir=str(spec.artifacts_dir), summary=summary,
        )
    return Committed(outcome=outcome, results=n)
