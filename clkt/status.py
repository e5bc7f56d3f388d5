"""One status report for `/status` and `clkt status`: queue counts, entities, jobs, errors, skips, cost."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, field_serializer
from rich.table import Table
from rich.text import Text

from clkt.report.cutoff_curve import RULE, TargetKnowledge, knowledge_curves, knowledge_windows
from storage.engine import Store
from storage.knowledge import known_by_month
from storage.llm_cache import CostSummary, cost_summary
from storage.status_counts import store_counts
from storage.targets import list_targets
from storage.types import utcnow

if TYPE_CHECKING:
    from clkt.config import SpecSettings

__all__ = [
    "MIN_ACCEPTED_FOR_RATE", "DaemonInfo", "FailedWorkInfo", "KnowledgeStatus", "StatusReport", "collect_status", "cost_table",
    "knowledge_table",
]

MIN_ACCEPTED_FOR_RATE = 10  # fewer accepted questions: $ per question is shown as too few to mean much


class FailedWorkInfo(BaseModel):
    """A stage task or GPU job that used up its attempts (GPU jobs: stage "gpu", no entity)."""

    stage: str
    entity_id: int | None
    key: str
    attempts: int
    error: str | None


class DaemonInfo(BaseModel):
    """Who serves the report: the daemon's owner id and its services' restarts (the `/status` endpoint)."""

    owner: str
    restarts: dict[str, int] = Field(default_factory=dict)  # service -> restarts so far


class KnowledgeStatus(BaseModel):
    """The cutoff each target really has, from its probe verdicts (`clkt.report.cutoff_curve`), and the rule."""

    targets: list[TargetKnowledge] = Field(default_factory=list)
    rule: str = RULE

    @property
    def alarms(self) -> list[TargetKnowledge]:
        return [t for t in self.targets if t.alarm]


class StatusReport(BaseModel):
    generated_at: datetime
    entities: dict[str, int] = Field(default_factory=dict)  # by status
    entities_by_domain: dict[str, int] = Field(default_factory=dict)
    stages: dict[str, dict[str, int]] = Field(default_factory=dict)  # stage -> status -> n
    gpu_jobs: dict[str, int] = Field(default_factory=dict)
    snapshots: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, dict[str, int]] = Field(default_factory=dict)  # source -> reason -> n
    last_errors: list[FailedWorkInfo] = Field(default_factory=list)  # newest failed tasks, then GPU jobs
    cost: CostSummary
    paused: str | None = None
    daemon: DaemonInfo | None = None  # None: not served by a daemon (`clkt status`)
    knowledge: KnowledgeStatus | None = None  # None: not asked for (collected with the spec's targets)

    @field_serializer("daemon")
    def _daemon_json(self, daemon: DaemonInfo | None) -> dict[str, object]:
        return {} if daemon is None else daemon.model_dump()  # no daemon: an empty object, as readers expect


async def collect_status(
    store: Store, *, paused: str | None = None, daemon: DaemonInfo | None = None, spec: SpecSettings | None = None,
) -> StatusReport:
    """The report; with `spec`, also the known-rate curves and contamination alarms of its targets (and of the
    store's other targets, by their stored cutoff)."""
    knowledge = None
    async with store.session() as s:
        counts = await store_counts(s)
        cost = await cost_summary(s)
        if spec is not None:
            rows = await known_by_month(s)
            extra = {t.name: t.cutoff for t in await list_targets(s)}
            knowledge = KnowledgeStatus(targets=knowledge_curves(rows, knowledge_windows(spec, extra)))
    return StatusReport(
        generated_at=utcnow(), entities=counts.entities, entities_by_domain=counts.entities_by_domain,
        stages=counts.stages, gpu_jobs=counts.gpu_jobs, snapshots=counts.snapshots, skipped=counts.skipped,
        last_errors=[FailedWorkInfo(stage=f.stage, entity_id=f.entity_id, key=f.key, attempts=f.attempts, error=f.error)
                     for f in counts.failures],
        cost=cost, paused=paused, daemon=daemon, knowledge=knowledge,
    )


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


def cost_table(summary: CostSummary) -> Table:
    """LLM cost per stage and model as a rich table: calls, input, cached input, output tokens, $, $ per accepted
    question (with n; flagged when n is too small to mean much), batch share."""
    n = summary.accepted_questions
    few = 0 < n < MIN_ACCEPTED_FOR_RATE
    per_q = "$ / accepted q" + (f" (n={n}, too few)" if few else f" (n={n})")
    t = Table("stage", "model", "calls", "input tok", "cached input", "output tok", "$", per_q, "batch share",
              title="LLM cost")
    for c in [*summary.stages, None]:
        if c is None:
            if not summary.stages:
                break
            t.add_section()
            row = ("all", "", summary.calls, summary.input_tokens, summary.cached_input_tokens, summary.output_tokens,
                   summary.cost_usd, (summary.batch_calls / summary.calls) if summary.calls else 0.0)
        else:
            row = (c.stage, c.model, c.calls, c.input_tokens, c.cached_input_tokens, c.output_tokens, c.cost_usd,
                   c.batch_share)
        stage, model, calls, inp, cached, out, usd, share = row
        t.add_row(
            Text(str(stage)), Text(str(model)), f"{calls:,}", f"{inp:,}", f"{cached:,}", f"{out:,}", _usd(float(usd)),
            _usd(float(usd) / n) if n else "no accepted question yet", f"{float(share):.0%}",
        )
    budget = summary.monthly_budget_usd
    t.caption = f"this month {_usd(summary.month_cost_usd)}" + (
        f" of {_usd(budget)} budget" + (" (spent: paid stages paused)" if summary.budget_exhausted else "")
        if budget is not None else ""
    )
    return t


def knowledge_table(k: KnowledgeStatus) -> Table:
    """Per target: its floor, the effective cutoff the verdicts give, the declared one, and the alarm."""
    t = Table("target", "declared cutoff", "window from", "months", "floor", "effective cutoff", "alarm",
              title="Knowledge cutoffs (probe verdicts by month of occurrence)", caption=k.rule)
    for x in k.targets:
        floor = f"{100 * x.floor:.1f}% (n={x.floor_n})" if x.floor is not None else x.note
        eff = x.effective_cutoff or ("none above the floor" if x.floor is not None else "—")
        alarm = Text("ALARM: " + ", ".join(x.alarm_months) + " above the floor: declared cutoff probably too early", style="bold red") \
            if x.alarm else Text("no")
        t.add_row(Text(x.target), str(x.declared_cutoff or "unknown"), str(x.window_start or "unknown"), str(len(x.months)),
                  Text(floor), eff, alarm)
    return t
