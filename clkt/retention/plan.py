"""What the data directory may drop, and what it keeps and why: the plan `clkt gc` prints and applies.

The rules (`[retention]`, `clkt.config.RetentionSettings`), per part of `<data_dir>`:

- `jobs/<id>/` of a committed (done) job: with `epoch_adapters = "best"` its other epochs' checkpoint folders and
  the best epoch's optimizer state go ("epoch checkpoints"); the best epoch's adapter, state and validation score
  stay ("best adapters": its results were measured with it), and so do its results (`predictions.jsonl`,
  `outcome.json`, `spec.json`). Its `job.log` and `progress.json` go once `job_logs_days` have passed since the
  commit ("job logs"). A pending or leased job's folder is in use, a failed job's folder says why it failed and
  is where a retry resumes: both are kept whole. A folder that names no job of this store is not touched.
- `jobs/base/<snapshot>/<target>-<key>.jsonl` (the base model's answers shared by one snapshot x target's jobs):
  with `base_caches = "until-done"` it goes once no job of that snapshot and target is pending or leased.
- `reports/<snapshot>/`: the current report (the folder the store records, the files its `report.md` lists) is
  always kept; with `old_reports = "drop"` the other files of that folder and the folders of snapshots the store
  no longer has go ("old reports").
- temporary files and folders (`.<name>.tmp-*`) that a killed writer left, once older than `TMP_AGE_S`.
- everything else is kept: the snapshots' export folders (frozen: never changed), the converted models,
  `edit-stats/` (knowledge editing's key statistics per model x layer: computed once, reused by every job), the store,
  the daemon's log files (bounded by their rotation), and anything this module does not know.

A plan is computed from the store first, the files second, and removes only what it listed; `apply_plan` checks
again, right before removing a base cache, that no job of its pair is pending or leased now. So `clkt gc` beside
a running daemon removes nothing a pending or leased job needs.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import ClassVar

from clkt.config import RetentionSettings
from clkt.errors import UserError
from clkt.inject.strategies import injector_for
from clkt.layout import (
    BASE_DIR,
    BOARD_CACHE_KEEP,
    CACHE_DIR,
    CKPT_DIR,
    EDIT_STATS_DIR,
    JOBS_DIR,
    LOG_FILE,
    MODELS_DIR,
    PROGRESS_FILE,
    REPORTS_DIR,
    STORE_PREFIX,
    VAL_FILE,
    base_cache_dir,
    base_cache_target,
    job_dir,
)
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.retention import JobFiles, job_files, jobs_in_flight, recorded_reports, snapshot_folders
from storage.types import utcnow

__all__ = ["TMP_AGE_S", "GcPlan", "Kept", "Removal", "StoreState", "plan_gc", "read_state", "scan"]

TMP_AGE_S = 3600.0  # a temporary file this old was left by a writer that died
_TMP = re.compile(r"^\..+\.tmp-")
_FIGURE_LINK = re.compile(r"!\[[^\]]*\]\(([^)/\\]+)\)")
REPORT_FILES = ("report.md", "table2.csv", "pairs.csv", "learn.csv", "metrics.json")


@dataclass(frozen=True, slots=True)
class Removal:
    category: str
    path: Path
    files: int
    bytes: int
    reason: str
    pair: tuple[str, str] | None = None  # a base cache: its (snapshot, target), checked again before removal


@dataclass(slots=True)
class Kept:
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreState:
    """What the plan reads from the store."""

    jobs: dict[int, JobFiles]
    in_flight: set[tuple[str, str]]
    reports: dict[str, str]  # snapshot -> recorded report folder
    snapshots: dict[str, str | None]  # snapshot -> export folder


@dataclass(slots=True)
class GcPlan:
    removals: list[Removal] = field(default_factory=list)
    kept: dict[tuple[str, str], Kept] = field(default_factory=dict)  # (category, why) -> files, bytes
    kept_outside: dict[tuple[str, str], Kept] = field(default_factory=dict)  # kept, outside the data directory

    CATEGORIES: ClassVar[tuple[str, ...]] = ("epoch checkpoints", "job logs", "base caches", "old reports", "temporary files")

    def keep(self, category: str, why: str, path: Path, *, outside: bool = False) -> None:
        files, size = tree_size(path)
        k = (self.kept_outside if outside else self.kept).setdefault((category, why), Kept())
        k.files += files
        k.bytes += size

    def drop(self, category: str, path: Path, reason: str, pair: tuple[str, str] | None = None) -> None:
        files, size = tree_size(path)
        self.removals.append(Removal(category=category, path=path, files=files, bytes=size, reason=reason, pair=pair))

    def freed(self) -> dict[str, Kept]:
        out = {c: Kept() for c in self.CATEGORIES}
        for r in self.removals:
            k = out.setdefault(r.category, Kept())
            k.files += r.files
            k.bytes += r.bytes
        return out


def tree_size(path: Path) -> tuple[int, int]:
    """(files, bytes) under `path` (a file: itself); symbolic links are not followed and count nothing."""
    try:
        if path.is_symlink():
            return 0, 0
        if path.is_file():
            return 1, path.stat().st_size
    except OSError:
        return 0, 0
    files = size = 0
    for root, dirs, names in os.walk(path, followlinks=False):
        for n in names:
            p = Path(root) / n
            try:
                if not p.is_symlink():
                    size += p.stat().st_size
                    files += 1
            except OSError:
                continue
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    return files, size


async def read_state(store: Store, *, job_id: int | None = None) -> StoreState:
    async with store.session() as s:
        jobs = {j.id: j for j in await job_files(s, job_id)}
        return StoreState(jobs=jobs, in_flight=await jobs_in_flight(s), reports=await recorded_reports(s),
                          snapshots=await snapshot_folders(s))


async def plan_gc(
    store: Store, *, data_dir: Path, retention: RetentionSettings, now: datetime | None = None, job_id: int | None = None
) -> GcPlan:
    """The plan for the whole data directory, or (`job_id`) for one committed job's folder and base cache only:
    what the consumer runs right after the job's commit."""
    state = await read_state(store, job_id=job_id)
    return await asyncio.to_thread(scan, state, data_dir=data_dir, retention=retention, now=now or utcnow(), job_id=job_id)


def _temporary(plan: GcPlan, path: Path, now: datetime) -> bool:
    """A writer's temporary file or folder: dropped once older than `TMP_AGE_S`, else kept (it may be at work);
    False when `path` is not one."""
    if not _TMP.match(path.name):
        return False
    try:
        old = now.timestamp() - path.lstat().st_mtime > TMP_AGE_S
    except OSError:
        return True
    if old:
        plan.drop("temporary files", path, "left by a writer that stopped")
    else:
        plan.keep("temporary files", "being written", path)
    return True


def scan(state: StoreState, *, data_dir: Path, retention: RetentionSettings, now: datetime, job_id: int | None = None) -> GcPlan:
    plan = GcPlan()
    if job_id is not None:
        job = state.jobs.get(job_id)
        if job is not None:
            _job(plan, job, job_dir(data_dir, job_id), retention, now)
            _base_caches(plan, base_cache_dir(data_dir, job.snapshot_id), job.snapshot_id, state, retention, now,
                         only=job.target)
        return plan
    _jobs(plan, data_dir / JOBS_DIR, state, retention, now)
    _reports(plan, data_dir / REPORTS_DIR, state, retention, now)
    _rest(plan, data_dir, state, retention)
    return plan


def _jobs(plan: GcPlan, root: Path, state: StoreState, retention: RetentionSettings, now: datetime) -> None:
    if not root.is_dir():
        return
    for d in sorted(root.iterdir()):
        if d.name == BASE_DIR and d.is_dir():
            for snap in sorted(p for p in d.iterdir() if p.is_dir()):
                _base_caches(plan, snap, snap.name, state, retention, now)
            continue
        if _temporary(plan, d, now):
            continue
        job = state.jobs.get(int(d.name)) if d.name.isdigit() else None
        if job is None:
            plan.keep("other", "not a GPU job of this store", d)
        else:
            _job(plan, job, d, retention, now)


def _job(plan: GcPlan, job: JobFiles, folder: Path, retention: RetentionSettings, now: datetime) -> None:
    if not folder.is_dir():
        return
    if job.status is LeaseStatus.failed:
        plan.keep("failed jobs", "a failed job keeps its folder (why it failed; a retry resumes from it)", folder)
        return
    if job.status is not LeaseStatus.done:
        plan.keep("jobs in flight", f"{job.status.value}: its job process may be using it", folder)
        return
    logs_due = now - job.updated_at >= timedelta(days=retention.job_logs_days)
    for p in sorted(folder.iterdir()):
        if p.name == CKPT_DIR and p.is_dir():
            _checkpoints(plan, job, p, retention)
        elif p.name in (LOG_FILE, PROGRESS_FILE):
            if logs_due:
                plan.drop("job logs", p, f"job {job.id} committed {job.updated_at:%Y-%m-%d} "
                                         f"(retention.job_logs_days = {retention.job_logs_days})")
            else:
                plan.keep("job logs", f"younger than retention.job_logs_days = {retention.job_logs_days}", p)
        elif _temporary(plan, p, now):
            pass
        else:
            plan.keep("job results", "a committed job's answers, outcome and spec", p)


def _checkpoints(plan: GcPlan, job: JobFiles, root: Path, retention: RetentionSettings) -> None:
    """The injector's own folder: what its strategy says a committed job no longer needs goes
    (`Injector.spare`: for the strategies that train, the other epochs' checkpoints and the optimizer state)."""
    if job.best_epoch is None:
        for d in sorted(root.iterdir()):
            plan.keep("best adapters", "no best epoch recorded: nothing of it is dropped", d)
        return
    if retention.epoch_adapters == "all":
        for d in sorted(root.iterdir()):
            plan.keep("epoch checkpoints", "retention.epoch_adapters = all", d)
        return
    try:
        spare = {s.path: s.reason for s in injector_for(job.strategy).spare(root, best_epoch=job.best_epoch)}
    except UserError:  # a strategy this installation no longer has: nothing of its folder is known to be spare
        for d in sorted(root.iterdir()):
            plan.keep("best adapters", f"strategy {job.strategy!r} is not registered here", d)
        return
    for d in sorted(root.iterdir()):
        for p in [d] if d in spare or not d.is_dir() else sorted(d.iterdir()):
            if p in spare:
                plan.drop("epoch checkpoints", p, f"job {job.id}: {spare[p]}")
            else:
                why = "its validation score" if p.name == VAL_FILE else "the job's results were measured with it"
                plan.keep("best adapters", why, p)


def _base_caches(
    plan: GcPlan, folder: Path, snapshot_id: str, state: StoreState, retention: RetentionSettings, now: datetime,
    *, only: str | None = None,
) -> None:
    if not folder.is_dir():
        return
    for f in sorted(folder.iterdir()):
        if _temporary(plan, f, now):
            continue
        target = base_cache_target(f.name)
        if target is None:
            plan.keep("other", "not a base cache", f)
        elif only is not None and target != only:
            continue
        elif (snapshot_id, target) in state.in_flight:
            plan.keep("base caches", f"a pending or leased job of {snapshot_id} / {target} reads it", f)
        elif retention.base_caches == "keep":
            plan.keep("base caches", "retention.base_caches = keep", f)
        else:
            plan.drop("base caches", f, f"no job of {snapshot_id} / {target} is pending or leased",
                      pair=(snapshot_id, target))


def report_files(folder: Path) -> set[str]:
    """The files a report folder's current report consists of: its data files and the figures report.md shows."""
    try:
        md = (folder / "report.md").read_text(encoding="utf-8")
    except OSError:
        md = ""
    return set(REPORT_FILES) | set(_FIGURE_LINK.findall(md))


def _reports(plan: GcPlan, root: Path, state: StoreState, retention: RetentionSettings, now: datetime) -> None:
    if not root.is_dir():
        return
    # a recorded folder is relative to the data directory (an absolute one, as stored before, is read as is)
    recorded = {(root.parent / p).resolve(): sid for sid, p in state.reports.items()}
    for d in sorted(root.iterdir()):
        if _temporary(plan, d, now):
            continue
        if d.name not in state.snapshots:
            if retention.old_reports == "drop":
                plan.drop("old reports", d, "its snapshot is no longer in the store")
            else:
                plan.keep("reports", "retention.old_reports = keep", d)
            continue
        if recorded.get(d.resolve()) != d.name:
            plan.keep("reports", "not recorded as its snapshot's report yet (`clkt report`, or being written)", d)
            continue
        listed = report_files(d)
        for f in sorted(d.iterdir()):
            if f.name in listed:
                plan.keep("current reports", "the current report of a snapshot", f)
            elif retention.old_reports == "drop":
                plan.drop("old reports", f, "not part of its snapshot's current report")
            else:
                plan.keep("reports", "retention.old_reports = keep", f)


def _rest(plan: GcPlan, data_dir: Path, state: StoreState, retention: RetentionSettings) -> None:
    """The top of the data directory besides jobs/ and reports/, and the snapshots' export folders."""
    root = data_dir.resolve()
    exports = [Path(p) for _, p in sorted(state.snapshots.items()) if p and Path(p).exists()]
    log_file = retention.log_file(data_dir)
    log_why = f"rotated at {retention.daemon_log_max_bytes} bytes, {retention.daemon_log_backups} backups"
    for p in sorted(data_dir.iterdir()) if data_dir.is_dir() else []:
        if p.name in (JOBS_DIR, REPORTS_DIR):
            continue
        here = p.resolve()
        if p.name == MODELS_DIR:
            plan.keep("models", "the converted target models (a fixed size)", p)
        elif p.name.startswith(STORE_PREFIX):
            plan.keep("store", "the store", p)
        elif log_file is not None and (here == log_file.resolve().parent or (
                p.is_file() and p.name.startswith(log_file.name) and log_file.resolve().parent == root)):
            plan.keep("daemon logs", log_why, p)
        elif p.name == EDIT_STATS_DIR and p.is_dir():
            plan.keep("edit statistics", "knowledge editing's key statistics, computed once per model x layer", p)
        elif p.name == CACHE_DIR and p.is_dir():
            plan.keep("kept results", f"clkt leaderboard's results, the newest {BOARD_CACHE_KEEP} (clkt.report.board_cache)", p)
        elif any(e.resolve().is_relative_to(here) for e in exports):
            plan.keep("snapshot exports", "a frozen snapshot never changes", p)
        else:
            plan.keep("other", "not managed by retention", p)
    for e in exports:
        if not e.resolve().is_relative_to(root):
            plan.keep("snapshot exports", "a frozen snapshot never changes", e, outside=True)
