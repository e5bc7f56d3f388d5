"""Running one leased publish task to its end: the try (`Publisher.publish`), then, in one transaction, the
revision it committed (or found on the Hub) and the end of the lease. The daemon's `publisher` service and
`clkt snapshot publish` both run tasks through `run_task`.

How a try ends:

- committed, or already on the Hub: the revision is recorded, the task is `done` (or `pending` again when it was
  asked again meanwhile);
- the Hub did not answer (`HubError.transient`: no connection, a timeout, 5xx, 429, the branch moved): the task goes
  back to `pending` after a backoff (`publish.backoff_start_s` doubling per consecutive failure up to
  `publish.backoff_max_s`, or the Hub's `Retry-After` when longer) and spends no attempt: a Hub that is down for
  a week loses nothing, the try after it publishes;
- the Hub refused (a bad token, no write access) or the snapshot cannot be published (not frozen, files that do
  not match their hashes): `failed` at once, with the reason;
- anything else (a full disk while staging): an attempt is spent, `pending` again after the backoff, `failed` once
  `publish.max_attempts` are spent.

The lease is extended every third of its duration while the try runs; a cancelled try (the daemon stops) gives
its lease back, refunded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import timedelta

from clkt import clock
from clkt.config import PublishSettings
from clkt.errors import LeaseLost
from clkt.logs import redact
from clkt.publish.hub import HubError
from clkt.publish.publisher import OutcomeKind, Publisher, PublishOutcome, PublishRefused, PublishTarget
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.publish import (
    PublishLease,
    defer_publish_task,
    fail_publish_task,
    finish_publish_task,
    heartbeat_publish_task,
    release_publish_task,
)
from storage.publish_revisions import record_revision

__all__ = ["TryResult", "backoff_s", "run_task"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TryResult:
    """How one try of a publish task ended."""

    status: LeaseStatus  # the task's status after it
    outcome: PublishOutcome | None = None
    error: str | None = None
    transient: bool = False  # the Hub did not answer: tried again later, no attempt spent
    retry_in_s: float | None = None


def backoff_s(publish: PublishSettings, failures: int, retry_after_s: float | None = None) -> float:
    """The wait after `failures` consecutive failures (0: the first), at least what the Hub asked for."""
    wait = min(publish.backoff_start_s * 2.0 ** min(failures, 40), publish.backoff_max_s)
    return max(wait, min(retry_after_s or 0.0, publish.backoff_max_s))


async def _heartbeat(store: Store, lease: PublishLease, *, owner: str, lease_s: float) -> None:
    while True:
        await clock.sleep(max(lease_s / 3, 0.05))  # the lease runs on the store's clock (clkt.clock)
        try:
            async with store.transaction() as s:
                await heartbeat_publish_task(s, lease.id, owner=owner, lease=timedelta(seconds=lease_s))
        except LeaseLost:
            log.warning("publish task %s: lease lost while publishing", lease.id)
            return


async def _record(store: Store, lease: PublishLease, outcome: PublishOutcome, *, owner: str) -> LeaseStatus:
    async def write(finish: bool) -> LeaseStatus:
        async with store.transaction() as s:
            if outcome.kind is OutcomeKind.committed or not outcome.recorded_locally:
                await record_revision(
                    s, repo=outcome.repo, branch=outcome.branch, snapshot_id=outcome.snapshot_id,
                    revision=outcome.revision, state_key=outcome.state_key, commit_oid=outcome.commit_oid,
                    held=outcome.held, retracted=outcome.retracted, report_fingerprint=outcome.report_fingerprint,
                    files=outcome.files, found_on_hub=outcome.kind is OutcomeKind.unchanged,
                )
            if not finish:
                return LeaseStatus.done
            return await finish_publish_task(s, lease, owner=owner, outcome=outcome.describe())

    try:
        return await asyncio.shield(write(True))
    except LeaseLost:  # another process took the task over: the revision is true all the same
        await asyncio.shield(write(False))
        return LeaseStatus.leased


async def run_task(
    store: Store, lease: PublishLease, *, owner: str, publisher: Publisher, publish: PublishSettings, lease_s: float,
) -> TryResult:
    """One try of the leased task, to its end (see the module docstring)."""
    task = lease.task
    beat = asyncio.create_task(_heartbeat(store, lease, owner=owner, lease_s=lease_s), name=f"publish-heartbeat-{task.id}")
    try:
        try:
            outcome = await publisher.publish(
                task.snapshot_id, PublishTarget(repo=task.repo, branch=task.branch, private=task.private)
            )
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
    except asyncio.CancelledError:
        async def give_back() -> None:
            async with store.transaction() as s:
                await release_publish_task(s, task.id, owner=owner)

        await asyncio.shield(give_back())
        raise
    except HubError as e:
        msg = redact(str(e))
        if e.transient:
            wait = backoff_s(publish, task.hub_failures, e.retry_after_s)
            async with store.transaction() as s:
                await defer_publish_task(s, task.id, owner=owner, reason=msg, defer=timedelta(seconds=wait))
            log.warning("publish of %s to %s@%s: %s; trying again in %.0f s", task.snapshot_id, task.repo, task.branch,
                        msg, wait)
            return TryResult(status=LeaseStatus.pending, error=msg, transient=True, retry_in_s=wait)
        return await _failed(store, task.id, owner=owner, error=msg, permanent=True, publish=publish, attempts=task.attempts)
    except PublishRefused as e:
        return await _failed(store, task.id, owner=owner, error=redact(str(e)), permanent=True, publish=publish,
                             attempts=task.attempts)
    except Exception as e:
        log.exception("publish of %s to %s@%s failed", task.snapshot_id, task.repo, task.branch)
        return await _failed(store, task.id, owner=owner, error=redact(f"{type(e).__name__}: {e}"), permanent=False,
                             publish=publish, attempts=task.attempts)
    status = await _record(store, lease, outcome, owner=owner)
    log.info("%s", outcome.describe())
    return TryResult(status=status, outcome=outcome)


async def _failed(
    store: Store, task_id: int, *, owner: str, error: str, permanent: bool, publish: PublishSettings, attempts: int,
) -> TryResult:
    wait = None if permanent else backoff_s(publish, max(attempts - 1, 0))
    try:
        async with store.transaction() as s:
            status = await fail_publish_task(s, task_id, owner=owner, error=error, permanent=permanent,
                                             retry_in=timedelta(seconds=wait) if wait is not None else None)
    except LeaseLost:
        status = LeaseStatus.leased
    log.warning("publish task %s: %s (%s)", task_id, error, status.value)
    return TryResult(status=status, error=error, retry_in_s=wait if status is LeaseStatus.pending else None)
