"""One status report for `/status` and `clkt status`: queue counts, entities, jobs, errors, skips, cost, publishing."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, field_serializer
from rich.table import Table
from rich.text import Text

from clkt import clock
from clkt.report.cutoff_curve import RULE, TargetKnowledge, knowledge_curves, knowledge_windows
from clkt.snapshots.accounting import PeriodAccounting, period_accounting
from storage.engine import Session, Store
from storage.enums import LeaseStatus, SnapshotTargetStatus
from storage.gpu_engines import latest_engine_status
from storage.knowledge import known_by_month
from storage.llm_cache import CostSummary, cost_summary
from storage.placements import accounting_counts
from storage.publish import publish_task_counts, publish_tasks
from storage.publish_revisions import recent_revisions
from storage.retractions import retraction_count
from storage.status_counts import store_counts
from storage.target_probes import probing_progress
from storage.targets import list_targets, snapshot_targets
from storage.types import utcnow

if TYPE_CHECKING:
    from clkt.config import SpecSettings

__all__ = [
    "MIN_ACCEPTED_FOR_RATE", "DaemonInfo", "FailedWorkInfo", "GpuEngineInfo", "KnowledgeStatus", "PublishStatus",
    "PublishTaskInfo", "PublishedRevisionInfo", "RegisteredTarget", "SnapshotValidity", "StatusReport", "TargetsStatus",
    "accounting_table", "collect_status", "cost_table", "knowledge_table", "publish_status",
]

MAX_PUBLISH_TASKS_SHOWN = 20
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


class RegisteredTarget(BaseModel):
    """A target the store has had (`active`: in the configuration the daemon last started with)."""

    name: str
    model: str
    active: bool


class SnapshotValidity(BaseModel):
    """One frozen snapshot's validity for one target: `valid` = entities - excluded when ready (else 0); while
    probing, how many of its entities the target was asked about so far."""

    snapshot_id: str
    target: str
    status: str  # ready | probing | out_of_window
    entities: int
    excluded: int
    valid: int
    probed: int | None = None  # probing: observe tasks ended


class TargetsStatus(BaseModel):
    """Targets over time (`clkt.roster`): the registry and every (snapshot, target) validity row."""

    targets: list[RegisteredTarget] = Field(default_factory=list)
    snapshots: list[SnapshotValidity] = Field(default_factory=list)

    @property
    def probing(self) -> list[SnapshotValidity]:
        return [v for v in self.snapshots if v.status == "probing"]

    def notes(self) -> list[str]:
        """One sentence per target still being probed on old snapshots."""
        by: dict[str, list[SnapshotValidity]] = {}
        for v in self.probing:
            by.setdefault(v.target, []).append(v)
        return [
            f"target {t} is being probed on {len(vs)} earlier snapshot(s) ({sum(v.probed or 0 for v in vs)} of "
            f"{sum(v.entities for v in vs)} entities asked); its GPU jobs there start once each is ready"
            for t, vs in sorted(by.items())
        ]


class PublishTaskInfo(BaseModel):
    """A publish task that is waiting, running or has failed (`clkt.publish`)."""

    snapshot_id: str
    repo: str
    branch: str
    status: str
    reason: str
    attempts: int
    hub_failures: int  # consecutive tries the Hub did not answer
    not_before: datetime  # a pending task is tried again from then
    last_error: str | None
    outcome: str | None


class PublishedRevisionInfo(BaseModel):
    """A publish revision: one Hub commit of a snapshot."""

    snapshot_id: str
    repo: str
    branch: str
    revision: int
    commit: str
    held: bool  # its test split was held back
    retracted: int
    committed_at: datetime


class PublishStatus(BaseModel):
    """Publishing to the Hugging Face Hub: the queue, the latest revisions, the errata."""

    tasks: dict[str, int] = Field(default_factory=dict)  # by status
    open_tasks: list[PublishTaskInfo] = Field(default_factory=list)  # pending, leased and failed, latest first
    revisions: list[PublishedRevisionInfo] = Field(default_factory=list)  # newest first
    retractions: int = 0


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
    targets: TargetsStatus = Field(default_factory=TargetsStatus)  # per target and snapshot: how many entities valid
    publish: PublishStatus = Field(default_factory=PublishStatus)
    gpu_engine: GpuEngineInfo | None = None  # None: the local engine (always ready), or no consumer ran yet
    knowledge: KnowledgeStatus | None = None  # None: not asked for (collected with the spec's targets)
    # per month of occurrence: where every entity is (clkt.snapshots.accounting; the view v_entity_accounting)
    accounting: list[PeriodAccounting] = Field(default_factory=list)

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
        targets = await _targets(s)
        publish = await _publish_status(s)
        engine = await latest_engine_status(s)
        accounting = period_accounting(await accounting_counts(s), now=clock.now())
        if spec is not None:
            rows = await known_by_month(s)
            extra = {t.name: t.cutoff for t in await list_targets(s)}
            knowledge = KnowledgeStatus(targets=knowledge_curves(rows, knowledge_windows(spec, extra)))
    return StatusReport(
        generated_at=utcnow(), entities=counts.entities, entities_by_domain=counts.entities_by_domain,
        stages=counts.stages, gpu_jobs=counts.gpu_jobs, snapshots=counts.snapshots, skipped=counts.skipped,
        last_errors=[FailedWorkInfo(stage=f.stage, entity_id=f.entity_id, key=f.key, attempts=f.attempts, error=f.error)
                     for f in counts.failures],
        cost=cost, paused=paused, daemon=daemon, targets=targets, publish=publish, knowledge=knowledge, accounting=accounting,
        gpu_engine=GpuEngineInfo(engine=engine.engine, state=engine.state, detail=engine.detail, address=engine.address,
                                 updated_at=engine.updated_at) if engine is not None else None,
    )


async def _targets(session: Session) -> TargetsStatus:
    rows = await snapshot_targets(session)
    progress: dict[tuple[str, str], tuple[int, int]] = {}
    if any(r.status is SnapshotTargetStatus.probing for r in rows):
        from clkt.pipeline.probe import probe_only_key  # the observing tasks' key (the stages load slowly: only now)

        progress = await probing_progress(session, key_of=probe_only_key)
    return TargetsStatus(
        targets=[RegisteredTarget(name=t.name, model=t.model, active=t.active) for t in await list_targets(session)],
        snapshots=[
            SnapshotValidity(snapshot_id=r.snapshot_id, target=r.target_name, status=r.status.value, entities=r.entities,
                             excluded=r.excluded, valid=r.valid,
                             probed=progress[(r.snapshot_id, r.target_name)][0] if (r.snapshot_id, r.target_name) in progress else None)
            for r in rows
        ],
    )


async def publish_status(store: Store) -> PublishStatus:
    """Publishing's part of the status alone (the status pages' `/publish`)."""
    async with store.session() as s:
        return await _publish_status(s)


async def _publish_status(session: Session) -> PublishStatus:
    tasks = await publish_tasks(session, limit=200)
    return PublishStatus(
        tasks=await publish_task_counts(session),
        open_tasks=[
            PublishTaskInfo(snapshot_id=t.snapshot_id, repo=t.repo, branch=t.branch, status=t.status.value, reason=t.reason,
                            attempts=t.attempts, hub_failures=t.hub_failures, not_before=t.not_before,
                            last_error=t.last_error, outcome=t.outcome)
            for t in tasks if t.status in (LeaseStatus.pending, LeaseStatus.leased, LeaseStatus.failed)
        ][:MAX_PUBLISH_TASKS_SHOWN],
        revisions=[
            PublishedRevisionInfo(snapshot_id=r.snapshot_id, repo=r.repo, branch=r.branch, revision=r.revision,
                                  commit=r.commit_oid, held=r.held, retracted=r.retracted, committed_at=r.committed_at)
            for r in await recent_revisions(session, limit=MAX_PUBLISH_TASKS_SHOWN)
        ],
        retractions=await retraction_count(session),
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


def accounting_table(rows: list[PeriodAccounting]) -> Table:
    """Per month of occurrence: where its entities are (every entity in exactly one column)."""
    t = Table("month", "in pipeline", "ready", "frozen", "carried", "waiting", "dropped", "total",
              title="Entities per month of occurrence (v_entity_accounting)",
              caption="frozen: in its own period's snapshot; carried: in a later one; waiting: ready, in no snapshot, "
                      "its month over (the next snapshot that freezes takes it)")
    for r in rows:
        dropped = ", ".join(f"{k} {n}" for k, n in sorted(r.dropped.items())) or "0"
        t.add_row(r.month, str(r.pipeline), str(r.ready), str(r.frozen), str(r.carried),
                  Text(str(r.waiting), style="yellow" if r.waiting else ""), Text(dropped), str(r.total))
    return t
