"""One try of publishing a frozen snapshot to a Hub repo and branch (`Publisher.publish`).

1. The snapshot must be frozen and its folder must match its hashes (`load_snapshot_dir(verify_hashes=True)`);
   otherwise it is never published (`PublishRefused`).
2. Its `PublishState` now (`clkt.publish.state`), and the Hub's: the repo is created when missing (private as
   asked), the branch too; the branch's history says which revision of the snapshot it holds (the commit marker).
3. The same state already on the Hub: nothing is committed (a no-op; recorded locally if this store had not
   recorded it: a try that committed and died before recording). Otherwise the next revision is built whole in a
   staging folder (`clkt.publish.tree`), then sent as ONE `create_commit` whose parent is the head read in step 2:
   the Hub applies all of it or none, and never on top of a head it was not built on.

The outcome is returned, not recorded: the caller records the revision and ends its publish task in one
transaction (`clkt.publish.runner`). A Hub failure raises `HubError` (transient ones spend no attempt); what the
try did not finish is redone whole by the next one, which reads the Hub's history again first.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

from pydantic import SecretStr

from clkt.config import PublishSettings
from clkt.errors import SnapshotError, UserError
from clkt.publish.card import EarlierRevision, RepoEntry
from clkt.publish.hub import HubClient, HubCommit, HubUnavailable
from clkt.publish.state import SnapshotPlan, hold_of, marker, parse_marker, plan_snapshot
from clkt.publish.tree import SnapshotMaterial, job_key, snapshot_folder, write_repo_files, write_snapshot_folder
from clkt.report.writer import load_report_data
from clkt.snapshots.builder import clkt_version
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir
from storage.engine import Store
from storage.enums import LeaseStatus, SnapshotStatus
from storage.gpu_jobs import GpuJobRecord, jobs_for_snapshot
from storage.publish import (
    PredictionRow,
    RevisionRecord,
    latest_revisions,
    predictions_for_snapshot,
    retractions_of,
    revisions_of,
)
from storage.snapshots import SnapshotRecord, find_snapshot, list_snapshots

__all__ = [
    "HubFactory", "OutcomeKind", "PublishOutcome", "PublishRefused", "PublishTarget", "Publisher", "frozen_snapshot_data",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
HubFactory = Callable[[str], HubClient]  # repo id -> a client (the token, endpoint and timeout are the factory's)
LORA_STRATEGIES = ("cpt-lora", "sft-lora")
_LIBRARIES = ("clkt", "torch", "transformers", "peft", "accelerate", "datasets", "huggingface_hub", "safetensors")


class PublishRefused(UserError):
    """What is asked cannot be published (not frozen, files that do not match their hashes, no token): never retried."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishTarget:
    repo: str
    branch: str
    private: bool = False  # a repo this publish creates is private


class OutcomeKind(str, Enum):
    committed = "committed"  # a new revision, committed now
    unchanged = "unchanged"  # the Hub already has this state (the same revision): nothing committed


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishOutcome:
    kind: OutcomeKind
    snapshot_id: str
    repo: str
    branch: str
    revision: int
    commit_oid: str
    state_key: str
    held: bool
    retracted: int
    report_fingerprint: str | None
    files: int = 0  # in the snapshot's folder of the commit
    deleted: int = 0
    created_repo: bool = False
    repo_private: bool | None = None  # as the Hub says (an existing repo keeps its visibility)
    recorded_locally: bool = True  # False: the Hub had it, this store did not (found in the Hub's history)

    def describe(self) -> str:
        where = f"{self.repo}@{self.branch}"
        if self.kind is OutcomeKind.unchanged:
            how = "" if self.recorded_locally else "; this store had not recorded it: recorded now"
            return (f"no-op: {where} already has revision {self.revision} of {self.snapshot_id} (commit "
                    f"{self.commit_oid[:12]}; read from the Hub's history{how})")
        extra = [f"{self.files} files", *([f"{self.deleted} removed"] if self.deleted else []),
                 *(["test split held back"] if self.held else []), *([f"{self.retracted} retracted"] if self.retracted else [])]
        created = f" (created the {'private' if self.repo_private else 'public'} repo)" if self.created_repo else ""
        return (f"published revision {self.revision} of {self.snapshot_id} to {where}{created}: commit "
                f"{self.commit_oid[:12]} ({', '.join(extra)})")


def _versions() -> dict[str, str]:
    out: dict[str, str] = {"clkt": clkt_version()}
    for name in _LIBRARIES[1:]:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _hub_revisions(history: list[HubCommit], snapshot_id: str) -> list[tuple[int, str, HubCommit]]:
    """(revision, state key, commit) of every commit of the branch that names the snapshot, newest first."""
    out: list[tuple[int, str, HubCommit]] = []
    for c in history:
        for sid, rev, key in parse_marker(c.title + "\n" + c.message):
            if sid == snapshot_id:
                out.append((rev, key, c))
    return out


def _staging_name(repo: str, branch: str, snapshot_id: str, revision: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{repo}@{branch}")
    return f"{safe}--{snapshot_id}-r{revision}-{secrets.token_hex(4)}"


async def frozen_snapshot_data(store: Store, snapshot_id: str) -> tuple[SnapshotRecord, SnapshotData]:
    """The snapshot and its frozen folder, checked against its hashes; `PublishRefused` otherwise."""
    async with store.session() as s:
        record = await find_snapshot(s, snapshot_id)
    if record is None:
        raise PublishRefused(f"unknown snapshot {snapshot_id!r} (see `clkt snapshot list`)")
    if record.status is not SnapshotStatus.frozen or not record.export_path:
        raise PublishRefused(f"snapshot {record.id} is {record.status.value}, not frozen: it is never published")
    try:
        data = await asyncio.to_thread(load_snapshot_dir, record.export_path, verify_hashes=True)
    except SnapshotError as e:
        raise PublishRefused(f"snapshot {record.id} is not published: {e}") from e
    if data.manifest.snapshot_id != record.id or data.manifest.content_sha256 != record.content_sha256:
        raise PublishRefused(f"snapshot {record.id} is not published: the folder {record.export_path} holds "
                             f"{data.manifest.snapshot_id}, not it")
    return record, data


class Publisher:
    """Publishes frozen snapshots of `store` (one try at a time; see the module docstring)."""

    def __init__(self, *, store: Store, publish: PublishSettings, hub: HubFactory, staging_dir: Path) -> None:
        self.store = store
        self.publish_cfg = publish
        self._hub = hub
        self.staging_dir = staging_dir

    @staticmethod
    def hub_factory(publish: PublishSettings, token: SecretStr | None) -> HubFactory:
        """Clients of `publish.endpoint` with `token`; `PublishRefused` when there is no token."""
        if token is None or not token.get_secret_value():
            raise PublishRefused(f"no Hub token: set the environment variable {publish.token_env} "
                                 "(publish.token_env names it) to a token with write access")
        return lambda repo: HubClient(repo_id=repo, token=token, endpoint=publish.endpoint, timeout_s=publish.timeout_s)

    async def _call(self, fn: Callable[[], T], what: str, *, deadline_s: float | None = None) -> T:
        limit = deadline_s if deadline_s is not None else self.publish_cfg.timeout_s * 2
        try:
            return await asyncio.wait_for(asyncio.to_thread(fn), timeout=limit)
        except TimeoutError:
            raise HubUnavailable(f"{what}: no answer from the Hub within {limit:.0f} s") from None

    async def frozen(self, snapshot_id: str) -> tuple[SnapshotRecord, SnapshotData]:
        return await frozen_snapshot_data(self.store, snapshot_id)

    async def publish(self, snapshot_id: str, target: PublishTarget) -> PublishOutcome:
        record, data = await self.frozen(snapshot_id)
        async with self.store.session() as s:
            plan = await plan_snapshot(s, record, publish=self.publish_cfg)
            local = await revisions_of(s, repo=target.repo, branch=target.branch, snapshot_id=record.id)
        hub = self._hub(target.repo)
        private = await self._call(hub.repo_private, "reading the repo")
        created = private is None
        if created:
            await self._call(lambda: hub.create_repo(private=target.private), "creating the repo")
            private = target.private
        await self._call(lambda: hub.ensure_branch(target.branch), "creating the branch")
        history = await self._call(lambda: hub.history(target.branch), "reading the history")
        head = history[0].oid if history else None
        on_hub = _hub_revisions(history, record.id)
        key = plan.state.key

        def outcome(kind: OutcomeKind, revision: int, oid: str, *, files: int = 0, deleted: int = 0,
                    recorded: bool = True) -> PublishOutcome:
            return PublishOutcome(
                kind=kind, snapshot_id=record.id, repo=target.repo, branch=target.branch, revision=revision,
                commit_oid=oid, state_key=key, held=plan.state.held, retracted=len(plan.state.retracted),
                report_fingerprint=plan.state.report_fingerprint, files=files, deleted=deleted, created_repo=created,
                repo_private=private, recorded_locally=recorded,
            )

        if on_hub and on_hub[0][1] == key:
            rev, _, commit = on_hub[0]
            known = any(r.revision == rev and r.state_key == key for r in local)
            return outcome(OutcomeKind.unchanged, rev, commit.oid, recorded=known)
        revision = max([0, *(r for r, _, _ in on_hub), *(r.revision for r in local)]) + 1
        earlier = self._earlier(on_hub, local)
        material = await self._material(plan, data, revision=revision, history=earlier)
        stage = self.staging_dir / _staging_name(target.repo, target.branch, record.id, revision)
        try:
            hub_files = await self._call(lambda: hub.files(target.branch), "listing the repo's files")
            paths = await asyncio.to_thread(write_snapshot_folder, stage, material)
            folder = snapshot_folder(record.id) + "/"
            deletions = sorted(p for p in hub_files if p.startswith(folder) and p not in set(paths))
            after = (set(hub_files) - set(deletions)) | set(paths)
            entries = await self._repo_entries(target, after, plan)
            async with self.store.session() as s:
                known_ids = [e.snapshot_id for e in entries if e.period is not None]
                errata = await retractions_of(s, known_ids)
            root_files = await asyncio.to_thread(
                write_repo_files, stage, repo=target.repo, paths=after, entries=entries, retractions=errata,
                languages=data.languages, sources=sorted(_all_sources()),
            )
            additions = [(p, stage / p) for p in [*paths, *root_files]]
            size = sum(local_path.stat().st_size for _, local_path in additions)
            title = f"Publish {record.id} revision {revision}"
            description = self._description(plan, revision, deletions) + "\n\n" + marker(record.id, revision, key)
            oid = await self._call(
                lambda: hub.commit(branch=target.branch, additions=additions, deletions=deletions, title=title,
                                   description=description, parent=head),
                "committing", deadline_s=self.publish_cfg.timeout_s * 2 + size / 2**20,
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, stage, True)
        return outcome(OutcomeKind.committed, revision, oid, files=len(paths), deleted=len(deletions))

    @staticmethod
    def _earlier(on_hub: list[tuple[int, str, HubCommit]], local: list[RevisionRecord]) -> list[EarlierRevision]:
        known = {r.revision: r for r in local}
        out: list[EarlierRevision] = []
        for rev, _, c in sorted(on_hub, key=lambda t: t[0]):
            rec = known.get(rev)
            out.append(EarlierRevision(revision=rev, commit_oid=c.oid, committed_at=c.created_at,
                                       held=rec.held if rec else None, retracted=rec.retracted if rec else None))
        return out

    @staticmethod
    def _description(plan: SnapshotPlan, revision: int, deletions: list[str]) -> str:
        st = plan.state
        parts = [f"clkt publish revision {revision} of the frozen snapshot {st.snapshot_id} "
                 f"(content sha256 {st.content_sha256})."]
        parts.append("Test split: " + (plan.hold.describe() if st.held else "published") + ".")
        if st.retracted:
            parts.append(f"Retracted and left out: {len(st.retracted)} question(s) (ERRATA.md).")
        parts.append("Report: " + ("included (jobs fingerprint " + st.report_fingerprint[:12] + ")"
                                   if st.report_fingerprint else "not yet") + ".")
        if deletions:
            parts.append(f"Removed {len(deletions)} file(s) of the previous revision.")
        return "\n".join(parts)

    async def _material(
        self, plan: SnapshotPlan, data: SnapshotData, *, revision: int, history: list[EarlierRevision]
    ) -> SnapshotMaterial:
        cfg, sid = self.publish_cfg, plan.record.id
        report = None
        predictions: list[PredictionRow] = []
        jobs: list[GpuJobRecord] = []
        adapters: dict[str, Path] = {}
        if plan.report is not None:
            retracted = frozenset(plan.state.retracted)
            if cfg.include_report:
                report = await load_report_data(self.store, sid, exclude_qids=retracted)
            async with self.store.session() as s:
                if cfg.include_predictions:
                    predictions = await predictions_for_snapshot(s, sid)
                all_jobs = await jobs_for_snapshot(s, sid)
            if cfg.include_configs:
                jobs = all_jobs
            if cfg.include_adapters:
                adapters = _adapters(all_jobs)
        return SnapshotMaterial(plan=plan, data=data, report=report, predictions=predictions, jobs=jobs,
                                adapters=adapters, revision=revision, history=history, versions=_versions())

    async def _repo_entries(self, target: PublishTarget, after: set[str], plan: SnapshotPlan) -> list[RepoEntry]:
        """The snapshot folders the branch will hold, newest period first, as the repo's card lists them."""
        folders = {p.split("/")[1] for p in after if p.startswith("snapshots/") and p.count("/") >= 2}
        async with self.store.session() as s:
            latest = await latest_revisions(s, repo=target.repo, branch=target.branch)
            records = {r.id: r for r in await list_snapshots(s)}
            entries: list[RepoEntry] = []
            for sid in folders:
                rec = records.get(sid)
                if sid == plan.record.id:
                    entries.append(RepoEntry(snapshot_id=sid, period=plan.record.period, revision=None,
                                             hold=plan.hold.describe(), retracted=len(plan.state.retracted),
                                             report=plan.state.report_fingerprint is not None and self.publish_cfg.include_report))
                    continue
                last = latest.get(sid)
                if rec is None or last is None:
                    entries.append(RepoEntry(snapshot_id=sid, period=rec.period if rec else None, revision=None,
                                             hold="unknown (published from another store)", retracted=0, report=False))
                    continue
                hold = await hold_of(s, rec, periods=self.publish_cfg.hold_back_periods)
                text = ("released" if hold.periods else "not held") if not last.held else (
                    hold.describe() if hold.held else "held; released in its next revision")
                entries.append(RepoEntry(snapshot_id=sid, period=rec.period, revision=last.revision, hold=text,
                                         retracted=last.retracted, report=last.report_fingerprint is not None))
        entries.sort(key=lambda e: (e.period or "", e.snapshot_id), reverse=True)
        return entries


def _all_sources() -> list[str]:
    from clkt.snapshots.card import SOURCE_LICENCES

    return list(SOURCE_LICENCES)


def _adapters(jobs: list[GpuJobRecord]) -> dict[str, Path]:
    """The best epoch's adapter folder of every finished LoRA job whose artifacts are on this machine."""
    from clkt.inject.job import CKPT_DIR
    from clkt.inject.trainer import epoch_dir

    out: dict[str, Path] = {}
    for j in jobs:
        if j.status is not LeaseStatus.done or j.strategy not in LORA_STRATEGIES or not j.artifacts_dir or j.best_epoch is None:
            continue
        folder = epoch_dir(Path(j.artifacts_dir) / CKPT_DIR, j.best_epoch)
        if (folder / "adapter_model.safetensors").is_file():
            out[job_key(j)] = folder
        else:
            log.info("job %s: no adapter at %s (not published)", j.id, folder)
    return out
