"""Service `incontext`: the in-context track of the spec's API targets on every frozen snapshot, after it freezes.

Runs only when the spec has an API target (`backend = "api"`): those have no GPU jobs, and this is how they are
measured. Local targets take the track with `clkt incontext SNAPSHOT` (it loads the model in that process, away
from the GPU queue's). Each (snapshot, target) runs until its track is complete; a provider failing mid-track is
retried after a backoff, and the track resumes where its stored answers stop (the calls are cached). In batch mode
(`[agents] mode` or `stage_modes.incontext` = "batch") a round queues the calls into provider batches and the next
rounds (every `poll_interval_s`) read the answers in; the batches are ticked here when this service built its own
dispatcher, else by the daemon's `llm-batches` service. Once every
API target's track of a snapshot is complete, its report is written, unless GPU jobs of the snapshot are still open
(the report writer's report after them includes the track).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from clkt import clock
from clkt.incontext.runner import run_incontext
from clkt.targets.api import ApiTargets, api_targets_for, is_api_target
from storage.enums import LeaseStatus, SnapshotStatus
from storage.gpu_jobs import jobs_for_snapshot
from storage.snapshots import list_snapshots

if TYPE_CHECKING:
    from clkt.config import AgentSettings, DaemonSettings, GpuSettings, SecretLookup, SpecSettings
    from clkt.context import ServiceContext

__all__ = ["InContextService"]

log = logging.getLogger(__name__)
_OPEN = (LeaseStatus.pending, LeaseStatus.leased)  # a GPU job the report writer still waits for


class InContextService:
    name = "incontext"
    RETRY_BACKOFF_S: ClassVar[float] = 300.0  # a failed track waits this long before it resumes

    def __init__(
        self, *, spec: SpecSettings, agents: AgentSettings, gpu: GpuSettings, daemon: DaemonSettings, data_dir: Path,
        secret: SecretLookup, burst: bool = False,
    ) -> None:
        self.spec = spec
        self.agents = agents
        self.gpu = gpu
        self.data_dir = data_dir
        self.secret = secret
        self.poll_interval_s = daemon.poll_interval_s
        self.burst = burst
        self.targets = [t.name for t in spec.targets if is_api_target(t)]
        self.done: set[str] = set()  # snapshots whose API targets' tracks are complete (this process)
        self._retry_at: dict[str, float] = {}
        self._api: ApiTargets | None = None

    @staticmethod
    def wanted(spec: SpecSettings) -> bool:
        """Whether the daemon runs it: the spec has an API target."""
        return any(is_api_target(t) for t in spec.targets)

    async def run(self, ctx: ServiceContext) -> None:
        while True:
            await self.run_due(ctx)
            if self.burst or await ctx.sleep(self.poll_interval_s):
                return

    async def run_due(self, ctx: ServiceContext) -> list[str]:
        """Run the track on every frozen snapshot not yet complete; the snapshots completed now."""
        async with ctx.store.session() as s:
            snaps = [x for x in await list_snapshots(s, spec=self.spec.name) if x.status == SnapshotStatus.frozen]
        if self._api is None:
            self._api = api_targets_for(ctx, agents=self.agents, secret=self.secret)
        out: list[str] = []
        for snap in snaps:
            if snap.id in self.done or self._retry_at.get(snap.id, 0.0) > clock.monotonic() or ctx.stopping.is_set():
                continue
            runs = await run_incontext(
                store=ctx.store, snapshot_id=snap.id, spec=self.spec, agents=self.agents, gpu=self.gpu,
                data_dir=self.data_dir, secret=self.secret, targets=self.targets, api=self._api, wait_batches=False,
            )
            failed = [r for r in runs if r.error or r.open_error]  # the short answers' stop retried as the MCQ's
            pending = sum(r.counts.pending for r in runs)
            if pending and not failed:  # batch mode: queued or in batches; the next round reads their answers
                await self._api.tick_batches()
                log.info("in-context track of %s: %d call(s) in provider batches", snap.id, pending)
                continue
            if failed:
                log.warning("in-context track of %s stopped: %s (resumes in %.0f s)", snap.id, failed[0].error or failed[0].open_error,
                            self.RETRY_BACKOFF_S)
                self._retry_at[snap.id] = clock.monotonic() + self.RETRY_BACKOFF_S
                continue
            self.done.add(snap.id)
            out.append(snap.id)
            await self._report(ctx, snap.id)
        return out

    async def _report(self, ctx: ServiceContext, snapshot_id: str) -> None:
        """The snapshot's report, unless a GPU job still open will have the report writer write it (with the
        track): with no GPU job, or every one finished (its report, written before the track ended, is rewritten)."""
        from clkt.report.writer import report_dir, write_report

        async with ctx.store.session() as s:
            if any(j.status in _OPEN for j in await jobs_for_snapshot(s, snapshot_id)):
                return
        await write_report(ctx.store, snapshot_id, report_dir(self.data_dir, snapshot_id), spec=self.spec)
        log.info("in-context track of %s complete; report written", snapshot_id)
