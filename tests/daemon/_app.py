"""A real daemon process for the daemon tests: test services instead of the product's.

    python tests/daemon/_app.py CONFIG.toml MARKER_DIR
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Self

from clkt.config import DaemonSettings, load_settings
from clkt.context import ServiceContext
from clkt.daemon import Daemon
from clkt.logs import setup_logging
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from storage.models import Stage, Task


@dataclasses.dataclass(frozen=True, kw_only=True)
class CountingContext(ServiceContext):
    """The daemon's context as one worker sees it, counting in `refused` every claim poll refused while
    claiming is paused: the positive signal that the worker had its chance to claim (and did not)."""

    refused: Path

    def may_claim(self) -> bool:
        ok = super().may_claim()
        if not ok:
            n = int(self.refused.read_text()) if self.refused.exists() else 0
            self.refused.write_text(str(n + 1))
        return ok


class SlowProbe(StageWorker):
    """Claims probe tasks and takes 1.5 s each (so SIGTERM lands while work is in flight); counts in
    `<marker>/refused-polls` each claim poll refused while claiming is paused."""

    def __init__(self, marker: Path, *, daemon: DaemonSettings) -> None:
        step = Step(stage=Stage.probe, worker=SlowProbe, role=None, next=None, status=None)  # a flow of its own
        super().__init__(step=step, daemon=daemon, concurrency=2)
        self.marker = marker

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        raise NotImplementedError("built by hand (a marker folder)")

    async def run(self, ctx: ServiceContext) -> None:
        # the same context (its stop event and pause list are shared objects), seen through CountingContext
        shared = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
        await super().run(CountingContext(**shared, refused=self.marker / "refused-polls"))

    async def process(self, task: Task, ctx: ServiceContext) -> None:
        (self.marker / f"started-{task.id}").touch()
        await asyncio.sleep(1.5)  # the work itself (not a wait): long enough for a SIGTERM to land mid-task
        async with ctx.store.transaction() as s:
            await finish(s, task, ctx)
        (self.marker / f"done-{task.id}").touch()


class Crasher:
    name = "crasher"

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.n = 0

    async def run(self, ctx: ServiceContext) -> None:
        self.n += 1
        (self.marker / f"crash-{self.n}").touch()
        raise RuntimeError("deliberate crash")


class Ticker:
    name = "ticker"

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    async def run(self, ctx: ServiceContext) -> None:
        i = 0
        while not await ctx.sleep(0.1):  # the service's own tick (the product's interruptible sleep), not a wait
            i += 1
            (self.marker / "ticks").write_text(str(i))


def main() -> int:
    settings = load_settings(sys.argv[1])
    marker = Path(sys.argv[2])
    setup_logging("INFO", secrets=settings.secrets.values())
    Daemon.RESTART_BACKOFF_START_S = 0.1
    daemon = Daemon(settings=settings,
                    services=[SlowProbe(marker, daemon=settings.daemon), Crasher(marker), Ticker(marker)])
    try:
        return asyncio.run(daemon.run())
    except Exception as e:  # noqa: BLE001
        print(f"clkt: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
