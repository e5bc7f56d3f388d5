"""The disk watch: a service that pauses claiming while the data directory's disk is nearly full.

Below `daemon.min_free_disk_mb` free (or when the data directory cannot be read), every worker stops
claiming new work (`ServiceContext.set_paused`); claiming resumes once space returns. Nothing is failed:
work already claimed finishes, and the `clkt_claiming_paused` gauge says why the queue stands still.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import ClassVar

from clkt.config import DaemonSettings
from clkt.context import ServiceContext

__all__ = ["DiskWatch"]

log = logging.getLogger("clkt.daemon")


class DiskWatch:
    name = "disk-watch"
    INTERVAL_S: ClassVar[float] = 2.0  # of the process's clock
    MIN_REAL_INTERVAL_S: ClassVar[float] = 0.5  # the disk fills in real time: no faster, whatever the clock's speed

    def __init__(self, *, daemon: DaemonSettings, data_dir: Path) -> None:
        """`daemon`: the limit (`min_free_disk_mb`); `data_dir`: the directory whose disk is watched."""
        self.limit_mb = daemon.min_free_disk_mb
        self.data_dir = data_dir

    def free_disk_mb(self) -> float:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return shutil.disk_usage(self.data_dir).free / 2**20

    async def run(self, ctx: ServiceContext) -> None:
        limit = self.limit_mb
        was_paused = False
        while not ctx.stopping.is_set():
            try:
                free = self.free_disk_mb()
            except OSError as e:
                free, reason = 0.0, f"data directory unusable: {e}"
            else:
                reason = f"disk nearly full: {free:.0f} MiB free < {limit} MiB on {self.data_dir}"
            low = free < limit
            if low and not was_paused:
                log.error("%s; claiming paused until space returns", reason)
                ctx.set_paused(reason)
            elif not low and was_paused:
                log.warning("disk space back (%.0f MiB free); claiming resumed", free)
                ctx.set_paused(None)
            was_paused = low
            ctx.metrics.paused.set(1 if ctx.pause_reason() else 0)
            if await ctx.sleep(self.INTERVAL_S, min_real_s=self.MIN_REAL_INTERVAL_S):
                return
