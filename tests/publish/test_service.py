"""The daemon's `publisher`: publishing by itself on a report, a retraction; a Hub that is down loses nothing; a
publish killed (-9) mid-commit is resumed and committed once; a missing token refuses the start."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from clkt.errors import ConfigError
from clkt.publish.errata import retract
from clkt.services import build_services, publish_service
from clkt.sources.board import SourceBoard
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.publish import find_publish_task
from storage.publish_revisions import latest_revisions
from tests.conftest import REPO as ROOT
from tests.conftest import wait_for
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import REPO, TOKEN, publish_settings, seed_snapshot, service_ctx


def _titles(hub: FakeHub) -> list[str]:
    return [c.title for c in hub.history(REPO)] if REPO in hub.repos else []


async def test_on_report_publishes_each_report_and_each_retraction_once(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_report=True, hold_back_periods=0)
    assert "publisher" in [s.name for s in build_services(settings, board=SourceBoard())]
    a = await seed_snapshot(store, settings, month=6, prefix="a", report=False)
    svc = publish_service(settings, burst=True)
    async with service_ctx(store) as ctx:
        assert await svc.reconcile(ctx) == []  # no report yet: nothing to publish on a report
        await svc.run(ctx)
        assert _titles(hub) == []
        from tests.publish.conftest import finish_jobs

        await finish_jobs(store, a, settings)  # the report is written
        assert await svc.reconcile(ctx) == [(a, "report")]
        assert await svc.reconcile(ctx) == []  # asked already: not twice
        await svc.run(ctx)
        assert _titles(hub)[0] == f"Publish {a} revision 1"
        assert f"snapshots/{a}/report/metrics.json" in hub.tree(REPO)
        assert await svc.reconcile(ctx) == []  # published: nothing more

        q = (await find_qid(store, a))
        await retract(store, a, q, reason="wrong answer", publish=settings.publish)  # asks for the next revision itself
        async with store.session() as s:
            task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=a)
        assert task is not None and task.status is LeaseStatus.pending and task.reason == "retraction"
        await svc.run(ctx)
        assert _titles(hub)[0] == f"Publish {a} revision 2"
        assert await svc.reconcile(ctx) == []
    assert all(r.outcome is not None for r in svc.results)


async def find_qid(store: Store, sid: str) -> int:
    from clkt.snapshots.content import load_item_refs

    async with store.session() as s:
        return (await load_item_refs(s, sid))[0].qid


async def test_a_hub_that_is_down_loses_no_report(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_report=True, hold_back_periods=0, max_attempts=1)
    a = await seed_snapshot(store, settings, month=6, prefix="a")
    hub.faults["info"] = ["500"] * 6  # the Hub is down for six tries
    svc = publish_service(settings, burst=True)

    async def published() -> bool:
        async with service_ctx(store) as ctx:
            await svc.run(ctx)
        return bool(_titles(hub)) and _titles(hub)[0] == f"Publish {a} revision 1"

    await wait_for(published, timeout=60, interval=0.05)
    transient = [r for r in svc.results if r.transient]
    assert len(transient) == 6 and all("HTTP 500" in str(r.error) for r in transient)
    async with store.session() as s:
        task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=a)
    # max_attempts = 1, yet six Hub failures spent none: the report waited and went out
    assert task is not None and task.status is LeaseStatus.done and task.attempts <= 1


def test_automatic_publishing_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, "http://127.0.0.1:9", repo=REPO, on_freeze=True, environ={})
    with pytest.raises(ConfigError, match="HF_TOKEN is not set"):
        build_services(settings, board=SourceBoard())


@pytest.mark.slow  # a `clkt snapshot publish` process, killed
async def test_a_publish_killed_mid_commit_is_resumed_and_committed_once(
    store: Store, db_url: str, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_report=True, hold_back_periods=0, store_url=db_url)
    a = await seed_snapshot(store, settings, month=6, prefix="a")
    hub.faults["commit"] = ["hang"]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") and not k.startswith("CLKT_")}
    env.update(HF_TOKEN=TOKEN, PYTHONPATH=str(ROOT), HF_HUB_DISABLE_TELEMETRY="1")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "clkt.cli", "snapshot", "publish", a, "--repo", REPO, "--config", str(tmp_path / "clkt.toml"),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    hanging = asyncio.create_task(hub.hanging.wait())
    exited = asyncio.create_task(proc.wait())
    await asyncio.wait({hanging, exited}, timeout=120, return_when=asyncio.FIRST_COMPLETED)  # the commit is on its way
    if proc.returncode is None:
        proc.kill()
    out, err = await proc.communicate()
    hanging.cancel()
    assert proc.returncode == -9, (out.decode(), err.decode())
    hub.release.set()
    async with store.session() as s:
        task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=a)
    assert task is not None and task.status is LeaseStatus.leased and f":{proc.pid}:" in str(task.lease_owner)
    assert _titles(hub) == ["initial commit"]  # the killed commit never landed

    svc = publish_service(settings, burst=True)  # a daemon starting: the dead process's lease comes back
    async with service_ctx(store) as ctx:
        await svc.run(ctx)
    assert _titles(hub) == [f"Publish {a} revision 1", "initial commit"]
    async with store.session() as s:
        latest = await latest_revisions(s, repo=REPO, branch="main")
        task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=a)
    assert latest[a].revision == 1 and task is not None and task.status is LeaseStatus.done


async def test_a_stop_mid_commit_gives_the_lease_back_and_the_next_try_publishes_once(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_report=True, hold_back_periods=0)
    a = await seed_snapshot(store, settings, month=6, prefix="a")
    hub.faults["commit"] = ["hang"]
    svc = publish_service(settings)
    async with service_ctx(store) as ctx:
        running = asyncio.create_task(svc.run(ctx), name="publisher")
        await asyncio.wait_for(hub.hanging.wait(), timeout=60)
        running.cancel()  # the supervisor cancels a service that outlives the grace period
        with pytest.raises(asyncio.CancelledError):
            await running
        async with store.session() as s:
            task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=a)
        assert task is not None and task.status is LeaseStatus.pending and task.attempts == 0
        hub.release.set()  # the abandoned request ends; the Hub applied nothing
        assert _titles(hub) == ["initial commit"]
        again = publish_service(settings, burst=True)
        await again.run(ctx)
    assert _titles(hub) == [f"Publish {a} revision 1", "initial commit"]
