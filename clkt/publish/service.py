"""Service `publisher`: the daemon publishes by itself (`[publish]` with `repo` and `on_freeze` / `on_report`).

What asks for a publish (a `publish_task` row, `storage.publish.enqueue_publish`):

- **on_freeze**: `freeze_hook` runs in the transaction that freezes a snapshot (the builder's `on_frozen`): the new
  snapshot is asked for, and so is every snapshot of the spec whose revision on the branch holds its test split
  back and that the new one releases (it is no longer among the newest `hold_back_periods`): the release is a new
  commit. A freeze and its publish task are one transaction: one is never without the other.
- **on_report**, retractions and releases: every `check_interval_s` the service compares each frozen snapshot of
  the spec with its latest revision on the branch (`reconcile`): a report written since (`storage.reports`:
  the report's jobs fingerprint changed; `on_report` only), a retraction, or a release makes a task. A snapshot
  never published is asked for once its report exists (`on_report`). Nothing is asked twice: a task already
  pending or running is left alone, and a state already published is a no-op.

Every `daemon.poll_interval_s` it claims one task and runs it (`clkt.publish.runner.run_task`). At start it
gives back the leases of publish processes of this host that died (a `kill -9`: their try is redone whole,
and the Hub's history tells whether its commit had landed) and retries the failed tasks once; at stop it gives
back its own lease. `burst=True`: reconcile once, run what is due, return (tests).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from pathlib import Path

from pydantic import SecretStr

from clkt import clock
from clkt.config import DaemonSettings, PublishSettings
from clkt.context import ServiceContext
from clkt.errors import ClktError
from clkt.owner import is_dead_local_owner
from clkt.publish.publisher import Publisher
from clkt.publish.runner import TryResult, run_task
from clkt.publish.state import SnapshotPlan, hold_of, plan_snapshot
from storage.engine import Session
from storage.enums import LeaseStatus, SnapshotStatus
from storage.publish import (
    claim_publish_tasks,
    enqueue_publish,
    find_publish_task,
    recover_publish_leases,
    release_publish_tasks_of,
    reset_failed_publish_tasks,
)
from storage.publish_revisions import RevisionRecord, latest_revisions
from storage.snapshots import FrozenHook, SnapshotRecord, list_snapshots

__all__ = ["PublishService", "freeze_hook", "why_publish"]

log = logging.getLogger(__name__)

_BUSY = (LeaseStatus.pending, LeaseStatus.leased)


def why_publish(plan: SnapshotPlan, last: RevisionRecord | None, publish: PublishSettings) -> str | None:
    """Why the snapshot of `plan` should get a new revision on the branch whose latest is `last` (None: no reason)."""
    state = plan.state
    if last is None:
        return "report" if publish.on_report and plan.report is not None else None
    if last.state_key == state.key:
        return None
    if last.held and not state.held:
        return "release"
    if len(state.retracted) != last.retracted:
        return "retraction"
    if publish.on_report and state.report_fingerprint is not None and state.report_fingerprint != last.report_fingerprint:
        return "report"
    return None  # settings changed: the next revision asked for another reason carries them


async def _releases(session: Session, snap: SnapshotRecord, publish: PublishSettings) -> list[str]:
    """The snapshots of `snap`'s spec whose latest revision on the branch is held and that are held no more."""
    assert publish.repo is not None
    latest = await latest_revisions(session, repo=publish.repo, branch=publish.revision)
    out: list[str] = []
    for r in await list_snapshots(session, spec=snap.spec):
        last = latest.get(r.id)
        if (r.status is SnapshotStatus.frozen and r.id != snap.id and last is not None and last.held
                and not (await hold_of(session, r, periods=publish.hold_back_periods)).held):
            out.append(r.id)
    return out


def freeze_hook(publish: PublishSettings) -> FrozenHook | None:
    """What the freezing transaction does for publishing (None: the daemon does not publish by itself)."""
    if not publish.automatic or publish.repo is None:
        return None
    repo = publish.repo

    async def on_frozen(session: Session, snap: SnapshotRecord) -> None:
        asks = [(snap.id, "frozen")] if publish.on_freeze else []
        asks += [(sid, "release") for sid in await _releases(session, snap, publish)]
        for sid, reason in asks:
            await enqueue_publish(session, repo=repo, branch=publish.revision, snapshot_id=sid, private=publish.private,
                                  reason=reason, max_attempts=publish.max_attempts)

    return on_frozen


class PublishService:
    """Service `publisher` (see the module docstring)."""

    name = "publisher"

    def __init__(
        self, *, publish: PublishSettings, daemon: DaemonSettings, spec_name: str, data_dir: Path,
        token: SecretStr | None, burst: bool = False,
    ) -> None:
        self.publish = publish
        self.daemon = daemon
        self.spec_name = spec_name
        self.staging_dir = data_dir / "publish"
        self.token = token
        self.burst = burst
        self.results: list[TryResult] = []  # every try this service ran, in order
        self._next_check = 0.0

    async def run(self, ctx: ServiceContext) -> None:
        publisher = Publisher(store=ctx.store, publish=self.publish, hub=Publisher.hub_factory(self.publish, self.token),
                              staging_dir=self.staging_dir)
        async with ctx.store.transaction() as s:
            recovered = await recover_publish_leases(s, is_dead=is_dead_local_owner)
            retried = await reset_failed_publish_tasks(s)
        if recovered or retried:
            log.info("publisher: %d publish task(s) of dead processes taken back, %d failed one(s) retried",
                     recovered, retried)
        try:
            while not ctx.stopping.is_set():
                if clock.monotonic() >= self._next_check:
                    await self._check(ctx)
                    self._next_check = clock.monotonic() + self.publish.check_interval_s
                ran = await self.run_one(ctx, publisher) if ctx.may_claim() else False
                if self.burst and not ran:
                    return
                if not ran and await ctx.sleep(self.daemon.poll_interval_s):
                    return
        finally:
            async def give_back() -> None:
                async with ctx.store.transaction() as s:
                    await release_publish_tasks_of(s, owner=ctx.owner)

            await asyncio.shield(give_back())

    async def _check(self, ctx: ServiceContext) -> None:
        try:
            asked = await self.reconcile(ctx)
        except ClktError as e:
            log.warning("publisher: could not compare the snapshots with their revisions: %s", e)
            return
        if asked:
            log.info("publisher: asked to publish %s", ", ".join(f"{sid} ({why})" for sid, why in asked))

    async def reconcile(self, ctx: ServiceContext) -> list[tuple[str, str]]:
        """Ask for every publish the spec's frozen snapshots need now (see `why_publish`); (snapshot, why) asked."""
        cfg = self.publish
        assert cfg.repo is not None
        asked: list[tuple[str, str]] = []
        async with ctx.store.transaction() as s:
            latest = await latest_revisions(s, repo=cfg.repo, branch=cfg.revision)
            for r in await list_snapshots(s, spec=self.spec_name):
                if r.status is not SnapshotStatus.frozen:
                    continue
                task = await find_publish_task(s, repo=cfg.repo, branch=cfg.revision, snapshot_id=r.id)
                if task is not None and task.status in _BUSY:
                    continue
                why = why_publish(await plan_snapshot(s, r, publish=cfg), latest.get(r.id), cfg)
                if why is None:
                    continue
                await enqueue_publish(s, repo=cfg.repo, branch=cfg.revision, snapshot_id=r.id, private=cfg.private,
                                      reason=why, max_attempts=cfg.max_attempts, reset_failed=False)
                asked.append((r.id, why))
        return asked

    async def run_one(self, ctx: ServiceContext, publisher: Publisher) -> bool:
        """Claim one due publish task and run it; False when none was due."""
        async with ctx.store.transaction() as s:
            leases = await claim_publish_tasks(s, owner=ctx.owner, lease=timedelta(seconds=self.daemon.lease_s))
        if not leases:
            return False
        res = await run_task(ctx.store, leases[0], owner=ctx.owner, publisher=publisher, publish=self.publish,
                             lease_s=self.daemon.lease_s)
        self.results.append(res)
        return True

