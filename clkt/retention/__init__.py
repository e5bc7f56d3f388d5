"""Retention of the data directory: what a committed job's folder, the base caches, the reports and the daemon's
log keep (`[retention]`), the plan `clkt gc` prints and applies (`plan`), the removal (`apply`, also right after
each job's commit) and the budget the data directory stays within (`budget`)."""

from __future__ import annotations

from clkt.retention.apply import GcResult, after_job_commit, apply_plan
from clkt.retention.budget import Budget, BudgetTerms, budget_of
from clkt.retention.plan import TMP_AGE_S, GcPlan, Kept, Removal, plan_gc

__all__ = [
    "TMP_AGE_S", "Budget", "BudgetTerms", "GcPlan", "GcResult", "Kept", "Removal", "after_job_commit", "apply_plan",
    "budget_of", "plan_gc",
]
