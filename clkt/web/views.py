"""What each status page shows, assembled from the store's read queries (`storage.status_pages`, the status
report of `clkt.status`, the cost summary), the daemon's live source board and the files on disk (GPU job
progress, snapshot manifests, reports). Frozen records only; the templates format them.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clkt.config import AgentSettings, DaemonSettings, SnapshotSettings, SourcesSettings, SpecSettings
from clkt.inject.contract import JobProgress
from clkt.layout import PROGRESS_FILE, job_dir
from clkt.report.data import LEARN_HEADER, ReportData, grid, learn_rows, pair_reading, scenarios
from clkt.report.locality import KEPT_HEADER, kept_row
from clkt.report.writer import report_dir
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest
from clkt.snapshots.period import period_of
from clkt.sources.board import CycleOutcome, SourceBoard
from clkt.sources.registry import SOURCE_TYPES
from clkt.status import StatusReport, collect_status
from clkt.web.files import list_files
from storage.engine import Store
from storage.llm_cache import CostSummary, cost_summary
from storage.status_pages import (
    EntityDetail,
    EntityFilter,
    EntityPage,
    GpuJobInfo,
    SnapshotInfo,
    entity_detail,
    entity_page,
    entity_sources,
    gpu_jobs,
    ready_by_domain,
    snapshot_info,
    snapshots,
    source_cursors,
)
from storage.targets import SnapshotTargetRecord, snapshot_targets
from storage.types import utcnow

__all__ = [
    "DiskInfo",
    "FillRow",
    "JobRow",
    "Overview",
    "ReportView",
    "SnapshotView",
    "SourceRow",
    "entities",
    "entity",
    "overview",
    "snapshot_list",
    "snapshot_view",
    "sources_for_filter",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRow:
    name: str
    domain: str
    enabled: bool
    configured_rate_per_s: float
    live: bool  # a poller of this process reports on it
    breaker: str | None
    breaker_reopens_in_s: float | None
    running_since: datetime | None
    last: CycleOutcome | None
    cycles: int
    next_poll_at: datetime | None
    watermark: datetime | None
    cursor_page: int | None
    cursor_updated_at: datetime | None
    entities: int
    skips: dict[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRow:
    job: GpuJobInfo
    phase: str | None = None
    done: int = 0
    total: int = 0
    epoch: int | None = None
    loss: float | None = None

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskInfo:
    path: str
    free_mb: float | None
    total_mb: float | None
    min_free_mb: int
    error: str | None = None

    @property
    def low(self) -> bool:
        return self.free_mb is not None and self.free_mb < self.min_free_mb


@dataclass(frozen=True, slots=True, kw_only=True)
class FillRow:
    domain: str
    ready: int
    quota: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Overview:
    generated_at: datetime
    mode: str  # "daemon" | "serve"
    owner: str | None
    offline_demo: bool
    paused: str | None
    status: StatusReport
    sources: list[SourceRow]
    jobs: list[JobRow]
    disk: DiskInfo
    cost: CostSummary
    period: str
    period_start: datetime
    period_end: datetime
    fill: list[FillRow]
    restarts: dict[str, int] = field(default_factory=dict)


def _source_domains() -> dict[str, str]:
    return {name: t.domain.value for name, t in SOURCE_TYPES.items()}


async def overview(
    store: Store, *, sources: SourcesSettings, snapshot: SnapshotSettings, agents: AgentSettings,
    daemon: DaemonSettings, data_dir: Path, offline_demo: bool, board: SourceBoard | None, paused: str | None,
    owner: str | None, restarts: dict[str, int] | None = None, spec: SpecSettings | None = None,
) -> Overview:
    now = utcnow()
    rep = await collect_status(store, paused=paused, spec=spec)
    period = period_of(now, snapshot.cadence)
    async with store.session() as s:
        cursors = {c.source: c for c in await source_cursors(s)}
        jobs = await gpu_jobs(s)
        cost = await cost_summary(s, monthly_budget_usd=agents.monthly_budget_usd, now=now)
        ready = await ready_by_domain(s, start=period.start, end=period.end)
    live = {x.source: x for x in (board.snapshot() if board is not None else [])}
    domains = _source_domains()
    configured = dict(sources.items())
    names = sorted({n for n in configured if n in domains} | set(cursors) | set(live) | set(rep.skipped))
    rows: list[SourceRow] = []
    for name in names:
        src = configured.get(name)
        lv, cur = live.get(name), cursors.get(name)
        rows.append(SourceRow(
            name=name, domain=domains.get(name, "?"), enabled=bool(src and src.enabled),
            configured_rate_per_s=src.rate_per_s if src else 0.0, live=lv is not None,
            breaker=lv.breaker if lv else None, breaker_reopens_in_s=lv.breaker_reopens_in_s if lv else None,
            running_since=lv.running_since if lv else None, last=lv.last if lv else None, cycles=lv.cycles if lv else 0,
            next_poll_at=lv.next_poll_at if lv else None, watermark=cur.watermark if cur else None,
            cursor_page=cur.page if cur else None, cursor_updated_at=cur.updated_at if cur else None,
            entities=cur.entities if cur else 0, skips=dict(sorted(rep.skipped.get(name, {}).items())),
        ))
    return Overview(
        generated_at=now, mode="daemon" if board is not None else "serve", owner=owner, offline_demo=offline_demo,
        paused=paused, status=rep, sources=rows, jobs=[_job_row(data_dir, j) for j in jobs],
        disk=_disk(data_dir, min_free_mb=daemon.min_free_disk_mb), cost=cost,
        period=period.label, period_start=period.start, period_end=period.end,
        fill=[FillRow(domain=d.value, ready=ready.get(d.value, 0), quota=q)
              for d, q in sorted(snapshot.quotas.items(), key=lambda x: x[0].value)],
        restarts=dict(restarts or {}),
    )


def _job_row(data_dir: Path, job: GpuJobInfo) -> JobRow:
    if job.status != "leased":
        return JobRow(job=job)

    try:
        p = JobProgress.model_validate_json((job_dir(data_dir, job.id) / PROGRESS_FILE).read_bytes())
    except (OSError, ValidationError):
        return JobRow(job=job)
    return JobRow(job=job, phase=p.phase, done=p.done, total=p.total, epoch=p.epoch, loss=p.loss)


def _disk(path: Path, *, min_free_mb: int) -> DiskInfo:
    try:
        u = shutil.disk_usage(path)
    except OSError as e:
        return DiskInfo(path=str(path), free_mb=None, total_mb=None, min_free_mb=min_free_mb, error=str(e))
    return DiskInfo(path=str(path), free_mb=u.free / 2**20, total_mb=u.total / 2**20, min_free_mb=min_free_mb)


async def entities(store: Store, f: EntityFilter) -> EntityPage:
    async with store.session() as s:
        return await entity_page(s, f)


async def sources_for_filter(store: Store) -> list[str]:
    async with store.session() as s:
        return await entity_sources(s)


async def entity(store: Store, entity_id: int) -> EntityDetail | None:
    async with store.session() as s:
        return await entity_detail(s, entity_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotSummary:
    """A snapshot's row with its manifest validated (None: not frozen yet, or unreadable: `manifest_error`)."""

    id: str
    spec: str
    period: str
    status: str
    partial: bool
    built_at: datetime
    export_path: str | None
    superseded_by: str | None
    manifest: SnapshotManifest | None
    manifest_error: str | None = None


def summarize_snapshot(info: SnapshotInfo) -> SnapshotSummary:
    manifest: SnapshotManifest | None = None
    err: str | None = None
    if info.manifest:
        try:
            manifest = SnapshotManifest.model_validate(info.manifest)
        except ValidationError as e:
            err = f"the stored manifest does not validate ({e.error_count()} errors)"
    return SnapshotSummary(
        id=info.id, spec=info.spec, period=info.period, status=info.status, partial=info.partial, built_at=info.built_at,
        export_path=info.export_path, superseded_by=info.superseded_by, manifest=manifest, manifest_error=err,
    )


async def snapshot_list(store: Store) -> list[SnapshotSummary]:
    async with store.session() as s:
        return [summarize_snapshot(i) for i in await snapshots(s)]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportView:
    directory: Path
    data: ReportData | None
    error: str | None
    grids: list[tuple[str, list[str], list[list[str]]]]
    learn_header: list[str]
    learn_rows: list[list[str]]
    control_rows: list[list[str]]
    pairs: list[tuple[Any, str]]  # (PairMetrics, reading) of the pooled domain
    heatmaps: list[str]
    files: list[tuple[str, int]]
    kept_rows: list[list[str]] = field(default_factory=list)  # kept % per job x scorer x test language (locality)
    kept_header: list[str] = field(default_factory=lambda: list(KEPT_HEADER))


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotView:
    info: SnapshotSummary
    manifest: SnapshotManifest | None
    manifest_note: str | None
    export_dir: Path | None
    files: list[tuple[str, int]]  # under the export folder
    report: ReportView | None
    targets: list[SnapshotTargetRecord] = field(default_factory=list)  # its validity per target (clkt.roster)


def _manifest_from_export(export: Path | None) -> SnapshotManifest | None:
    if export is None:
        return None
    try:
        return SnapshotManifest.model_validate_json((export / MANIFEST_FILE).read_bytes())
    except (OSError, ValidationError):
        return None


def _report_view(directory: Path) -> ReportView | None:
    if not directory.is_dir():
        return None
    files = list_files(directory)
    data: ReportData | None = None
    error: str | None = None
    try:
        data = ReportData.model_validate_json((directory / "metrics.json").read_bytes())
    except OSError:
        error = "no metrics.json in the report folder yet"
    except ValidationError as e:
        error = f"metrics.json does not validate ({e.error_count()} errors): written by another version?"
    grids: list[tuple[str, list[str], list[list[str]]]] = []
    learn: list[list[str]] = []
    control: list[list[str]] = []
    kept: list[list[str]] = []
    pairs: list[tuple[Any, str]] = []
    if data is not None:
        for title, label, _, cells in scenarios(data):
            header, rows = grid(data, label, cells)
            grids.append((title, header, rows))
        learn = learn_rows(data.learn)
        control = learn_rows(data.control_learn)
        kept = [kept_row(k) for k in data.locality]
        pairs = [(p, pair_reading(data, p)) for p in data.pairs if p.domain == "all"]
    heat = [rel for rel, _ in files if rel.startswith("heatmap-") and rel.endswith(".png")]
    return ReportView(directory=directory, data=data, error=error, grids=grids, learn_header=LEARN_HEADER, learn_rows=learn,
                      control_rows=control, pairs=pairs, heatmaps=heat, files=files, kept_rows=kept)


async def snapshot_view(store: Store, snapshot_id: str, *, data_dir: Path) -> SnapshotView | None:
    async with store.session() as s:
        stored = await snapshot_info(s, snapshot_id)
        targets = await snapshot_targets(s, snapshot_id=stored.id) if stored is not None else []
    if stored is None:
        return None
    info = summarize_snapshot(stored)
    export = Path(info.export_path) if info.export_path else None
    if export is not None and not export.is_dir():
        export = None  # an archive, or gone
    manifest, note = info.manifest, info.manifest_error
    if manifest is None:
        manifest = _manifest_from_export(export)
        if manifest is not None:
            note = "manifest read from the snapshot folder (the store row has none)"
    files = list_files(export) if export is not None else []
    return SnapshotView(info=info, manifest=manifest, manifest_note=note, export_dir=export, files=files,
                        report=_report_view(report_dir(data_dir, info.id)), targets=targets)
