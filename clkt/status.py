"""One status report for `/status` and `clkt status`: queue counts, entities, jobs, errors, skips, cost."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, field_serializer
from rich.table import Table
from rich.text import Text

from storage.engine import Store
from storage.gpu_engines import latest_engine_status
from storage.llm_cache import CostSummary, cost_summary
from storage.status_counts import store_counts
from storage.types import utcnow

__all__ = [
    "MIN_ACCEPTED_FOR_RATE", "DaemonInfo", "FailedWorkInfo", "GpuEngineInfo", "StatusReport", "collect_status", "cost_table",
]

MIN_ACCEPTED_FOR_RATE = 10  # fewer accepted questions: $ per question is shown as too few to mean much


class FailedWorkInfo(BaseModel):
    """A stage task or GPU job that used up its attempts (GPU jobs: stage "gpu", no entity)."""

    stage: str
    entity_id: int | None
    key: str
    attempts: int
    error: str | None


class GpuEngineInfo(BaseModel):
    """What the GPU consumer last said about its engine (`[gpu] engine = "ray"`): ready, or why GPU jobs wait."""

    engine: str
    state: str  # ready | connecting | unreachable | unschedulable | stopped
    detail: str
    address: str | None = None
    updated_at: datetime

    @property
    def waiting(self) -> bool:
        return self.state != "ready"

    def line(self) -> str:
        where = f" ({self.address})" if self.address else ""
        why = "GPU jobs wait: " if self.state in ("connecting", "unreachable", "unschedulable") else ""
        return f"GPU engine {self.engine}{where}: {self.state} — {why}{self.detail}"


class DaemonInfo(BaseModel):
    """Who serves the report: the daemon's owner id and its services' restarts (the `/status` endpoint)."""

    owner: str
    restarts: dict[str, int] = Field(default_factory=dict)  # service -> restarts so far


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
    gpu_engine: GpuEngineInfo | None = None  # None: the local engine (always ready), or no consumer ran yet

    @field_serializer("daemon")
    def _daemon_json(self, daemon: DaemonInfo | None) -> dict[str, object]:
        return {} if daemon is None else daemon.model_dump()  # no daemon: an empty object, as readers expect


async def collect_status(store: Store, *, paused: str | None = None, daemon: DaemonInfo | None = None) -> StatusReport:
    async with store.session() as s:
        counts = await store_counts(s)
        cost = await cost_summary(s)
        engine = await latest_engine_status(s)
    return StatusReport(
        generated_at=utcnow(), entities=counts.entities, entities_by_domain=counts.entities_by_domain,
        stages=counts.stages, gpu_jobs=counts.gpu_jobs, snapshots=counts.snapshots, skipped=counts.skipped,
        last_errors=[FailedWorkInfo(stage=f.stage, entity_id=f.entity_id, key=f.key, attempts=f.attempts, error=f.error)
                     for f in counts.failures],
        cost=cost, paused=paused, daemon=daemon,
        gpu_engine=GpuEngineInfo(engine=engine.engine, state=engine.state, detail=engine.detail, address=engine.address,
                                 updated_at=engine.updated_at) if engine is not None else None,
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
