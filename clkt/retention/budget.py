"""The retention budget: how many bytes the data directory may hold, as a function of what the store holds.

With the default `[retention]` (and after each commit's retention, or `clkt gc`):

    data_dir  <=  models + store + exports_inside + best_adapters                        (measured: fixed or referenced)
                + done_jobs x JOB_FILES_BYTES + answers x ANSWER_BYTES          (each committed job's results, 32 KiB, 1 KiB)
                + reports x REPORT_BYTES + reported_jobs x REPORT_JOB_BYTES     (each current report, 512 KiB, 256 KiB)
                + log_cap                                  (daemon_log_max_bytes x (daemon_log_backups + 1), or 0)
                + kept_results                   (measured: `clkt leaderboard`'s newest results, a bounded count)
                + in_flight + failed                                   (measured: jobs not committed; exempt)

`models` is the converted target models (a constant: it does not grow with time), `store` the SQLite files (their
growth per entity is the year bench's own figure), `exports_inside` the snapshots' export folders when
`snapshot.out_dir` lies inside the data directory, `best_adapters` the best epoch's folder of every committed job
(about 2 x r x (d_in + d_out) x 4 bytes per adapted linear layer for LoRA; what its results were measured with),
`answers` the job's stored answers (its predictions and outcome files hold each, with the control split's). A
base cache lives only while a job of its (snapshot, target) is pending or leased: at rest it is 0. So the data
directory grows with snapshots, jobs and their answers, never with epochs, log lines or time.

`Budget.within` is what `bench/year.py` checks (`clkt gc --dry-run --json` prints it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from clkt.config import RetentionSettings
from clkt.retention.plan import GcPlan, StoreState, read_state, scan
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.retention import result_counts
from storage.types import utcnow

__all__ = ["Budget", "BudgetTerms", "budget_of", "budget_terms"]


class BudgetTerms(BaseModel):
    """The formula's inputs (bytes or counts)."""

    models: int
    store: int
    exports_inside: int
    best_adapters: int
    done_jobs: int
    answers: int
    reports: int
    reported_jobs: int
    log_cap: int
    kept_results: int  # measured: clkt leaderboard's kept results (at most CACHE_KEEP files)
    in_flight: int  # exempt: jobs not committed yet, and the base caches they read
    failed: int  # exempt: failed jobs keep their folders


class Budget(BaseModel):
    terms: BudgetTerms
    bound_bytes: int
    data_dir_bytes: int  # measured now, before the plan's removals
    after_gc_bytes: int  # what the data directory holds once the plan is applied
    within: bool  # after_gc_bytes <= bound_bytes

    # measured (tests/roster/test_late_target_job.py, Gemma 3 270M, all-linear LoRA r=16): spec, state, val, the
    # adapter's config and README ~8 KB; ~410 B per stored answer in predictions.jsonl + outcome.json (~720 B with
    # the control split's answers at the demo's share); a one-job report ~80 KB; the best adapter 15.2 MB
    JOB_FILES_BYTES: ClassVar[int] = 32 * 1024  # spec.json, state.json, val.json, the adapter's config and README
    ANSWER_BYTES: ClassVar[int] = 1024  # one stored answer in predictions.jsonl + outcome.json (control share too)
    REPORT_BYTES: ClassVar[int] = 512 * 1024  # report.md, the CSVs and metrics.json of one snapshot
    REPORT_JOB_BYTES: ClassVar[int] = 256 * 1024  # the figures one more job adds to its snapshot's report


def _sum(plan: GcPlan, category: str) -> int:
    return sum(k.bytes for (c, _), k in plan.kept.items() if c == category)


def budget_terms(plan: GcPlan, state: StoreState, answers: dict[int, int], retention: RetentionSettings) -> BudgetTerms:
    done = [j for j in state.jobs.values() if j.status is LeaseStatus.done]
    reported = {sid for sid in state.reports if sid in state.snapshots}
    return BudgetTerms(
        models=_sum(plan, "models"), store=_sum(plan, "store"), exports_inside=_sum(plan, "snapshot exports"),
        best_adapters=_sum(plan, "best adapters"), done_jobs=len(done),
        answers=sum(answers.get(j.id, 0) for j in done), reports=len(reported),
        reported_jobs=sum(1 for j in state.jobs.values() if j.snapshot_id in reported), log_cap=retention.log_cap_bytes,
        kept_results=_sum(plan, "kept results"),
        in_flight=_sum(plan, "jobs in flight") + _sum(plan, "base caches"), failed=_sum(plan, "failed jobs"),
    )


def _bound(t: BudgetTerms) -> int:
    return (t.models + t.store + t.exports_inside + t.best_adapters + t.done_jobs * Budget.JOB_FILES_BYTES
            + t.answers * Budget.ANSWER_BYTES + t.reports * Budget.REPORT_BYTES + t.reported_jobs * Budget.REPORT_JOB_BYTES
            + t.log_cap + t.kept_results + t.in_flight + t.failed)


async def budget_of(store: Store, *, data_dir: Path, retention: RetentionSettings) -> tuple[Budget, GcPlan]:
    """The budget of the data directory now, and the plan it was measured with."""
    state = await read_state(store)
    async with store.session() as s:
        answers = await result_counts(s)
    plan = await asyncio.to_thread(scan, state, data_dir=data_dir, retention=retention, now=utcnow())
    terms = budget_terms(plan, state, answers, retention)
    kept = sum(k.bytes for k in plan.kept.values())
    freed = sum(r.bytes for r in plan.removals)
    bound = _bound(terms)
    return Budget(terms=terms, bound_bytes=bound, data_dir_bytes=kept + freed, after_gc_bytes=kept,
                  within=kept <= bound), plan
