"""What one publish revision is written from (`gather_material`) and how the repo's card lists the snapshot folders
the branch will hold (`repo_entries`): reads of the store and of this machine, before anything is written."""

from __future__ import annotations

import importlib.metadata
import logging
from pathlib import Path

from clkt.config import PublishSettings
from clkt.publish.card import EarlierRevision, RepoEntry
from clkt.publish.state import SnapshotPlan, hold_of
from clkt.publish.tree import SnapshotMaterial, held_qids, job_key
from clkt.report.writer import load_report_data
from clkt.snapshots.builder import clkt_version
from clkt.snapshots.card import SOURCE_LICENCES
from clkt.snapshots.layout import SnapshotData
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import GpuJobRecord, jobs_for_snapshot
from storage.open_judgements import JuryRow, jury_rows_for_snapshot
from storage.open_results import OpenResultRow, open_results_for_snapshot
from storage.publish_revisions import PredictionRow, latest_revisions, predictions_for_snapshot
from storage.retractions import RetractionRecord, retractions_of
from storage.snapshots import list_snapshots

__all__ = ["gather_material", "known_sources", "library_versions", "repo_entries", "repo_errata"]

log = logging.getLogger(__name__)
_LIBRARIES = ("torch", "transformers", "peft", "accelerate", "datasets", "huggingface_hub", "safetensors")


def library_versions() -> dict[str, str]:
    """The versions of clkt and the libraries a job uses, in this environment."""
    out: dict[str, str] = {"clkt": clkt_version()}
    for name in _LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


async def gather_material(
    store: Store, publish: PublishSettings, plan: SnapshotPlan, data: SnapshotData, *, revision: int,
    history: list[EarlierRevision],
) -> SnapshotMaterial:
    """What the snapshot's folder of this revision is written from: the report recomputed without the retracted
    questions, every answer and job config of its finished jobs, their adapters (as `publish` includes them; none
    before the snapshot has a current report)."""
    cfg, sid = publish, plan.record.id
    report = None
    predictions: list[PredictionRow] = []
    open_rows: list[OpenResultRow] = []
    open_jury: list[JuryRow] = []
    jobs: list[GpuJobRecord] = []
    adapters: dict[str, Path] = {}
    if plan.report is not None:
        retracted = frozenset(plan.state.retracted)
        if cfg.include_report:
            report = await load_report_data(store, sid, exclude_qids=retracted)
        async with store.session() as s:
            if cfg.include_predictions:
                predictions = await predictions_for_snapshot(s, sid)
                open_rows = await open_results_for_snapshot(s, sid)
                open_jury = await jury_rows_for_snapshot(s, sid, votes=True)
            all_jobs = await jobs_for_snapshot(s, sid)
        if cfg.include_configs:
            jobs = all_jobs
        if cfg.include_adapters:
            adapters = _adapters(all_jobs)
    return SnapshotMaterial(plan=plan, data=data, report=report, predictions=predictions, open_predictions=open_rows,
                            open_jury=open_jury, jobs=jobs,
                            adapters=adapters, revision=revision, history=history, versions=library_versions())

async def repo_entries(
    store: Store, publish: PublishSettings, *, repo: str, branch: str, after: set[str], plan: SnapshotPlan
) -> list[RepoEntry]:
    """The snapshot folders the branch will hold, newest period first, as the repo's card lists them."""
    folders = {p.split("/")[1] for p in after if p.startswith("snapshots/") and p.count("/") >= 2}
    async with store.session() as s:
        latest = await latest_revisions(s, repo=repo, branch=branch)
        records = {r.id: r for r in await list_snapshots(s)}
        entries: list[RepoEntry] = []
        for sid in folders:
            rec = records.get(sid)
            if sid == plan.record.id:
                entries.append(RepoEntry(snapshot_id=sid, period=plan.record.period, revision=None,
                                         hold=plan.hold.describe(), retracted=len(plan.state.retracted),
                                         report=plan.state.report_fingerprint is not None and publish.include_report))
                continue
            last = latest.get(sid)
            if rec is None or last is None:
                entries.append(RepoEntry(snapshot_id=sid, period=rec.period if rec else None, revision=None,
                                         hold="unknown (published from another store)", retracted=0, report=False))
                continue
            hold = await hold_of(s, rec, periods=publish.hold_back_periods)
            text = ("released" if hold.periods else "not held") if not last.held else (
                hold.describe() if hold.held else "held; released in its next revision")
            entries.append(RepoEntry(snapshot_id=sid, period=rec.period, revision=last.revision, hold=text,
                                     retracted=last.retracted, report=last.report_fingerprint is not None))
    entries.sort(key=lambda e: (e.period or "", e.snapshot_id), reverse=True)
    return entries


def known_sources() -> list[str]:
    """Every source whose licence a card can state."""
    return list(SOURCE_LICENCES)


def _adapters(jobs: list[GpuJobRecord]) -> dict[str, Path]:
    """The best epoch's adapter folder of every finished job whose artifacts are on this machine and hold a PEFT
    adapter there (whatever its strategy: one that leaves no adapter, like full fine-tuning, has nothing to publish)."""
    from clkt.layout import CKPT_DIR, epoch_dir

    out: dict[str, Path] = {}
    for j in jobs:
        if j.status is not LeaseStatus.done or not j.artifacts_dir or j.best_epoch is None:
            continue
        folder = epoch_dir(Path(j.artifacts_dir) / CKPT_DIR, j.best_epoch)
        if (folder / "adapter_model.safetensors").is_file():
            out[job_key(j)] = folder
        else:
            log.info("job %s: no adapter at %s (not published)", j.id, folder)
    return out


async def repo_errata(
    store: Store, *, repo: str, branch: str, snapshot_ids: list[str], plan: SnapshotPlan, data: SnapshotData,
) -> tuple[list[RetractionRecord], int]:
    """The retractions the repo's `ERRATA.md` names, and how many it only counts: those of a snapshot the branch
    still holds back (this snapshot by this revision, another by its latest revision) are never named (a held
    snapshot names none of its questions, of either split)."""
    this_held = held_qids(data) if plan.state.held else frozenset()
    named: list[RetractionRecord] = []
    hidden = 0
    async with store.session() as s:
        latest = await latest_revisions(s, repo=repo, branch=branch)
        for r in await retractions_of(s, snapshot_ids):
            mine = r.snapshot_id == plan.record.id
            if r.qid in this_held if mine else (r.snapshot_id in latest and latest[r.snapshot_id].held):
                hidden += 1
            else:
                named.append(r)
    return named, hidden
