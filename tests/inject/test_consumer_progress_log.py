"""A running job's progress line is paced in real seconds, whatever the calendar's speed.

`bench/year.py` (14,400x) logged "job 1 (...): base:base:generate 16/172" every 0.5 s poll: the interval was
measured on the simulated clock, where 30 s last 2 ms.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from clkt import clock
from clkt.config import EMBEDDED_TARGET, DaemonSettings, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.inject.contract import JobProgress
from clkt.inject.engine import EndKind, JobEnd, RunningJob
from clkt.layout import PROGRESS_FILE
from clkt.telemetry import Metrics
from storage.engine import Store
from tests.inject._fixtures import make_consumer


class _Run(RunningJob):
    """A job that runs `for_s` real seconds, then exits 0."""

    def __init__(self, for_s: float) -> None:
        self.until = time.monotonic() + for_s

    async def wait(self, timeout_s: float) -> JobEnd | None:
        import asyncio

        left = self.until - time.monotonic()
        if left <= 0:
            return JobEnd(kind=EndKind.exited, returncode=0, where="local")
        await asyncio.sleep(min(timeout_s, left))
        return None

    async def stop(self) -> None:
        self.until = 0.0

    async def hand_back(self) -> str:
        return "stopped"


@pytest.mark.parametrize("speed", [1.0, 14_400.0])
async def test_progress_lines_follow_real_seconds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, speed: float,
) -> None:
    from clkt.inject.consumer import GpuConsumer

    monkeypatch.setattr(GpuConsumer, "POLL_S", 0.05)
    monkeypatch.setattr(GpuConsumer, "PROGRESS_LOG_S", 1.0)
    settings = Settings(data_dir=tmp_path / "data", spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
                        gpu=GpuSettings(devices=["cpu"]), daemon=DaemonSettings())
    (tmp_path / PROGRESS_FILE).write_text(JobProgress(phase="train", done=3, total=12, epoch=1).model_dump_json())
    spec: Any = SimpleNamespace(artifacts_dir=tmp_path)
    old = clock.install(clock.SimulatedClock(start=datetime(2026, 1, 1, tzinfo=UTC), speed=speed))
    try:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store, aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
            consumer = make_consumer(settings)
            with caplog.at_level(logging.INFO, logger="clkt.inject.consumer"):
                end = await consumer._supervise(ctx, _Run(2.3), 1, spec, timedelta(days=36_500), "job 1")
    finally:
        clock.install(old)
    assert isinstance(end, JobEnd) and end.returncode == 0
    lines = [r.getMessage() for r in caplog.records if "train 3/12 epoch 1" in r.getMessage()]
    # 2.3 real seconds at one line a real second: 2 (at most 3 on a slow machine's late poll), never one per poll
    assert 1 <= len(lines) <= 3, f"{len(lines)} progress lines at {speed}x: {lines[:3]}"
