"""A publish task that waits with no daemon to run it says so in `clkt status`, and `clkt snapshot publish ID
--cancel` withdraws it (nothing is sent to the Hub, no token is needed)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

import clkt.cli as cli
from clkt.cli import common
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.publish import enqueue_publish, find_publish_task
from storage.types import utcnow
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli.main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


def test_a_waiting_publish_says_it_needs_a_daemon_and_can_be_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"

    async def seed() -> None:
        async with Store(url=url) as store:
            await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
            async with store.transaction() as s:
                await enqueue_publish(s, repo="me/bench", branch="main", snapshot_id=SNAPSHOT_ID, private=False,
                                      reason="frozen", max_attempts=3, now=utcnow() - timedelta(hours=2))

    async def task_status() -> LeaseStatus | None:
        async with Store(url=url) as store, store.session() as s:
            t = await find_publish_task(s, repo="me/bench", branch="main", snapshot_id=SNAPSHOT_ID)
            return None if t is None else t.status

    asyncio.run(seed())
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')
    monkeypatch.setattr(common.console, "width", 250)
    code, out, err = _run(["status", "--config", str(cfg)], capsys)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "waiting for a daemon" in flat and f"clkt snapshot publish {SNAPSHOT_ID} --cancel" in flat, out
    code, out, err = _run(["snapshot", "publish", SNAPSHOT_ID[:6], "--cancel", "--config", str(cfg)], capsys)
    assert code == 0, err
    assert f"cancelled the publish of {SNAPSHOT_ID} to me/bench@main" in out
    assert asyncio.run(task_status()) is LeaseStatus.cancelled
    code, out, _ = _run(["status", "--config", str(cfg)], capsys)
    assert "waiting for a daemon" not in out
    code, _, err = _run(["snapshot", "publish", SNAPSHOT_ID, "--cancel", "--config", str(cfg)], capsys)
    assert code == 2 and f"no waiting publish of {SNAPSHOT_ID} to cancel" in err
