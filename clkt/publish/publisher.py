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
from clkt.publish.card import EarlierRevision
from clkt.publish.hub import HubClient, HubCommit, HubUnavailable
from clkt.publish.material import gather_material, known_sources, repo_entries, repo_errata
from clkt.publish.state import SnapshotPlan, marker, parse_layouts, parse_marker, plan_snapshot
from clkt.publish.tree import snapshot_folder, write_repo_files, write_snapshot_folder
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir
from storage.engine import Store
from storage.enums import SnapshotStatus
from storage.publish_revisions import (
    RevisionRecord,
    revisions_of,
)
from storage.snapshots import SnapshotRecord, find_snapshot

__all__ = [
    "HubFactory", "OutcomeKind", "PublishOutcome", "PublishRefused", "PublishTarget", "Publisher", "frozen_snapshot_data",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
HubFactory = Callable[[str], HubClient]  # repo id -> a client (the token, endpoint and timeout are the factory's)
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


def _hub_revisions(history: list[HubCommit], snapshot_id: str) -> list[tuple[int, str, HubCommit]]:
    """(revision, state key, commit) of every commit of the branch that names the snapshot, newest first."""
    out: list[tuple[int, str, HubCommit]] = []
    for c in history:
        for sid, rev, key in parse_marker(c.title + "\n" + c.message):
            if sid == snapshot_id:
                out.append((rev, key, c))
    return out


def _staging_prefix(repo: str, branch: str, snapshot_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{repo}@{branch}") + f"--{snapshot_id}-r"


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
        earlier = self._earlier(on_hub, local, snapshot_id=record.id)
        material = await gather_material(self.store, self.publish_cfg, plan, data, revision=revision, history=earlier)
        prefix = _staging_prefix(target.repo, target.branch, record.id)
        for left in self.staging_dir.glob(prefix + "*"):  # what a killed try of this task left (we hold its lease)
            await asyncio.to_thread(shutil.rmtree, left, True)
        stage = self.staging_dir / f"{prefix}{revision}-{secrets.token_hex(4)}"
        try:
            hub_files = await self._call(lambda: hub.files(target.branch), "listing the repo's files")
            paths = await asyncio.to_thread(write_snapshot_folder, stage, material)
            folder = snapshot_folder(record.id) + "/"
            deletions = sorted(p for p in hub_files if p.startswith(folder) and p not in set(paths))
            after = (set(hub_files) - set(deletions)) | set(paths)
            entries = await repo_entries(self.store, self.publish_cfg, repo=target.repo, branch=target.branch,
                                         after=after, plan=plan)
            errata, held_errata = await repo_errata(
                self.store, repo=target.repo, branch=target.branch, plan=plan, data=data,
                snapshot_ids=[e.snapshot_id for e in entries if e.period is not None],
            )
            root_files = await asyncio.to_thread(
                write_repo_files, stage, repo=target.repo, paths=after, entries=entries, retractions=errata,
                languages=data.languages, sources=known_sources(), held_retractions=held_errata,
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
    def _earlier(on_hub: list[tuple[int, str, HubCommit]], local: list[RevisionRecord], *,
                 snapshot_id: str) -> list[EarlierRevision]:
        known = {r.revision: r for r in local}
        out: list[EarlierRevision] = []
        for rev, _, c in sorted(on_hub, key=lambda t: t[0]):
            rec = known.get(rev)
            layout = parse_layouts(c.title + "\n" + c.message).get((snapshot_id, rev), 1)
            out.append(EarlierRevision(revision=rev, commit_oid=c.oid, committed_at=c.created_at,
                                       held=rec.held if rec else None, retracted=rec.retracted if rec else None,
                                       layout=layout))
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

