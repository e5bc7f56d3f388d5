"""`clkt snapshot publish ID --repo OWNER/NAME [--private] [--revision R]` and
`clkt snapshot retract ID QUESTION_ID --reason TEXT` (added to the `snapshot` group by `add_commands`).

`publish` runs the publish as a task of the lease queue, in this process: the same try as the daemon's
`publisher` (`clkt.publish.runner`), fenced by the same lease, so the CLI and a daemon never publish the same
snapshot at once. The token comes from the environment only (`publish.token_env`, default `HF_TOKEN`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from clkt.cli.common import ConfigOption, console, fail, load_cli_settings, plain, read_store, run_async, snapshot_id

if TYPE_CHECKING:
    from clkt.config import Settings
    from clkt.publish.errata import Retracted
    from clkt.publish.runner import TryResult
    from storage.publish import PublishTaskRecord

__all__ = ["add_commands"]

IdArg = Annotated[str, typer.Argument(help="snapshot id (or a unique prefix)")]


def add_commands(group: typer.Typer) -> None:
    group.command("publish", help="Publish a frozen snapshot, its report and what is behind every score to a Hub "
                  "dataset repo: one commit per publish revision (the same revision again: a no-op).")(publish)
    group.command("retract", help="Retract a wrong question of a frozen snapshot: every later publish revision "
                  "(and its report) leaves it out; ERRATA.md lists it.")(retract)


def publish(
    ident: IdArg,
    repo: Annotated[str | None, typer.Option("--repo", help="the Hub dataset repo owner/name (default: publish.repo)")] = None,
    private: Annotated[bool, typer.Option("--private", help="create the repo private (an existing one keeps its visibility)")] = False,
    revision: Annotated[str | None, typer.Option("--revision", help="the Hub branch to commit to (default: publish.revision, main)")] = None,
    cancel: Annotated[bool, typer.Option("--cancel", help="withdraw the snapshot's waiting publish (of --repo/--revision "
                                         "when given) instead; nothing is sent to the Hub")] = False,
    config: ConfigOption = None,
) -> None:
    from datetime import timedelta

    from clkt.config.publish import check_branch, check_repo_id
    from clkt.owner import new_owner_id
    from clkt.publish.publisher import Publisher, PublishRefused, frozen_snapshot_data
    from clkt.publish.runner import run_task
    from storage.enums import LeaseStatus
    from storage.publish import claim_publish_tasks, enqueue_publish, find_publish_task

    settings = load_cli_settings(config)
    if cancel:
        _cancel(settings, ident, repo=repo, branch=revision)
        return
    cfg = settings.publish
    target = repo if repo is not None else cfg.repo
    if target is None:
        raise fail("--repo: name the Hub dataset repo (owner/name), or set publish.repo")
    try:
        check_repo_id(target)
    except ValueError as e:
        raise fail(f"--repo: {e}") from None
    branch = revision if revision is not None else cfg.revision
    try:
        check_branch(branch)
    except ValueError as e:
        raise fail(f"--revision: {e}") from None
    owner = new_owner_id("publish-")
    lease = timedelta(seconds=settings.daemon.lease_s)

    async def go() -> TryResult:
        async with read_store(settings) as store:
            snap_id = await snapshot_id(store, ident)
            await frozen_snapshot_data(store, snap_id)  # not frozen / files not matching their hashes: nothing queued
            hub = Publisher.hub_factory(cfg, settings.secret(cfg.token_env))  # no token: refused, nothing queued
            publisher = Publisher(store=store, publish=cfg, hub=hub, staging_dir=settings.data_dir / "publish")
            async with store.transaction() as s:
                task = await enqueue_publish(s, repo=target, branch=branch, snapshot_id=snap_id,
                                             private=private or cfg.private, reason="cli", max_attempts=cfg.max_attempts, urgent=True)
            async with store.transaction() as s:
                leases = await claim_publish_tasks(s, owner=owner, lease=lease, task_id=task.id)
                now = await find_publish_task(s, repo=target, branch=branch, snapshot_id=snap_id)
            if not leases:
                raise PublishRefused(_busy(snap_id, f"{target}@{branch}", now))
            return await run_task(store, leases[0], owner=owner, publisher=publisher, publish=cfg,
                                  lease_s=settings.daemon.lease_s)

    res = run_async(go)
    if res.outcome is not None:
        console.print(plain(res.outcome.describe()))
        if res.outcome.created_repo is False and private and res.outcome.repo_private is False:
            console.print(plain(f"note: {target} already existed and is public: --private applies to a repo it creates"))
        return
    if res.transient:
        raise fail(f"{res.error}; nothing half-committed: the publish task waits and is tried again (by the daemon "
                   "when it publishes by itself, or by this command)", 1)
    raise fail(str(res.error), 2 if res.status is LeaseStatus.failed else 1)


def _cancel(settings: Settings, ident: str, *, repo: str | None, branch: str | None) -> None:
    """`clkt snapshot publish ID --cancel`: the snapshot's waiting publish tasks become `cancelled`."""
    from storage.publish import cancel_publish_tasks

    async def go() -> tuple[str, list[PublishTaskRecord]]:
        async with read_store(settings) as store:
            sid = await snapshot_id(store, ident)
            async with store.transaction() as s:
                return sid, await cancel_publish_tasks(s, snapshot_id=sid, repo=repo, branch=branch)

    sid, cancelled = run_async(go)
    if not cancelled:
        raise fail(f"no waiting publish of {sid} to cancel" + (f" ({repo or '*'}@{branch or '*'})" if repo or branch else ""))
    for t in cancelled:
        console.print(plain(f"cancelled the publish of {sid} to {t.repo}@{t.branch} ({t.status.value}, "
                            f"{t.attempts} tries); `clkt snapshot publish {sid}` asks again"))


def _busy(snapshot_id: str, where: str, task: PublishTaskRecord | None) -> str:
    from storage.enums import LeaseStatus

    if task is not None and task.status is LeaseStatus.leased and task.lease_expires_at is not None:
        return (f"{snapshot_id} is being published to {where} by {task.lease_owner} (lease until "
                f"{task.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC): try again once it ends")
    return f"the publish of {snapshot_id} to {where} cannot be claimed now"


def retract(
    ident: IdArg,
    question_id: Annotated[int, typer.Argument(help="the question's qid (as in the snapshot's questions/<lang>.jsonl, or "
                                                    "open/<lang>.jsonl); the other format's questions on its fact go with it")],
    reason: Annotated[str, typer.Option("--reason", help="why the question is wrong (listed in ERRATA.md)")],
    config: ConfigOption = None,
) -> None:
    from clkt.publish.errata import retract as record

    settings = load_cli_settings(config)

    async def go() -> Retracted:
        async with read_store(settings) as store:
            return await record(store, ident, question_id, reason=reason, publish=settings.publish)

    r = run_async(go)
    rec = r.record
    if r.same_fact:
        console.print(plain(f"with it, on the same fact: question(s) {', '.join(str(t.qid) for t in r.same_fact)}"))
    if not r.new:
        console.print(plain(f"question {rec.qid} of {rec.snapshot_id} was already retracted on "
                            f"{rec.retracted_at:%Y-%m-%d %H:%M} UTC ({rec.reason}); that retraction stands"))
        return
    then = ("the daemon publishes it in the snapshot's next revision" if r.asked_publish
            else "the snapshot's next publish revision leaves it out (`clkt snapshot publish`)")
    console.print(plain(f"retracted question {rec.qid} of {rec.snapshot_id}: {rec.reason}; {then}"))
