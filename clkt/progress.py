"""A service that logs one progress line at an interval (entities, stage queues, snapshots, GPU jobs), and
the demo watcher that stops the daemon once the first snapshot's report is written (recorded in the store
by the `report-writer` service, `clkt.report.service`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from clkt.context import ServiceContext
from clkt.report.writer import report_dir
from clkt.status import collect_status
from storage.reports import current_report
from storage.status_counts import first_frozen_snapshot

__all__ = ["DemoWatcher", "ProgressLogger"]

log = logging.getLogger("clkt.progress")


class ProgressLogger:
    name = "progress"
    INTERVAL_S: ClassVar[float] = 15.0  # of the process's clock
    MIN_REAL_INTERVAL_S: ClassVar[float] = 1.0  # a line for people: never more often, whatever the clock's speed

    async def run(self, ctx: ServiceContext) -> None:
        last = ""
        while not await ctx.sleep(self.INTERVAL_S, min_real_s=self.MIN_REAL_INTERVAL_S):
            rep = await collect_status(ctx.store, paused=ctx.pause_reason())
            ents = " ".join(f"{k}={v}" for k, v in sorted(rep.entities.items())) or "none yet"
            stages = " ".join(
                f"{st}:{by.get('done', 0)}/{sum(by.values())}" for st, by in sorted(rep.stages.items())
            )
            jobs = " ".join(f"{k}={v}" for k, v in sorted(rep.gpu_jobs.items()))
            snaps = " ".join(f"{k}={v}" for k, v in sorted(rep.snapshots.items()))
            line = f"entities [{ents}] stages [{stages}] snapshots [{snaps or 'none'}] gpu jobs [{jobs or 'none'}]"
            if rep.paused:
                line += f" PAUSED: {rep.paused}"
            if line != last:
                log.info("progress: %s", line)
                last = line


class DemoWatcher:
    """Stops the daemon when the first frozen snapshot has all its GPU jobs finished and its report written from
    exactly those jobs."""

    name = "demo-watcher"
    INTERVAL_S: ClassVar[float] = 2.0

    def __init__(self, *, on_done: Callable[[str, Path], object], gpu_enabled: bool, data_dir: Path) -> None:
        """`gpu_enabled`: whether the snapshot gets GPU jobs and a report to wait for; `data_dir`: where reports go."""
        self.on_done = on_done  # (snapshot id, the report folder; the export folder without GPU jobs)
        self.gpu_enabled = gpu_enabled
        self.data_dir = data_dir
        self.result: tuple[str, Path] | None = None

    async def run(self, ctx: ServiceContext) -> None:
        while not await ctx.sleep(self.INTERVAL_S):
            async with ctx.store.session() as s:
                snap = await first_frozen_snapshot(s)
            if snap is None:
                continue
            if not self.gpu_enabled:
                self.result = (snap.id, Path(snap.export_path or ""))
                self.on_done(snap.id, Path(snap.export_path or ""))
                return
            async with ctx.store.session() as s:
                report = await current_report(s, snap.id)
            if report is not None:
                rdir = report_dir(self.data_dir, snap.id)
                self.result = (snap.id, rdir)
                self.on_done(snap.id, rdir)
                return
