"""Service `report-writer`: writes a snapshot's report once all its GPU jobs have finished.

Every `daemon.poll_interval_s` it asks the store which reports are due (`storage.reports.due_reports`: every
GPU job of the snapshot done or failed, and no report recorded from exactly those jobs), writes each into
`<data_dir>/reports/<snapshot>/` (`clkt.report.writer.write_report`; file by file atomically) and records it (`record_report`: the
jobs' fingerprint, the folder, when), so it neither rewrites a report every poll nor forgets one after a
restart, and "a report was written for snapshot X" can be read from the store. A job that runs again, or
joins the snapshot later, makes the recorded report stale: it is written again once every job has finished.

A report that fails is logged and tried again after `RETRY_BACKOFF_START_S`, doubling up to
`RETRY_BACKOFF_MAX_S` (kept in memory: a restart tries at once); the service never raises for it. When the
daemon stops, one last pass writes what became due since the last poll (the supervisor's grace period
bounds it). `burst=True`: one pass, then return (`clkt worker --burst`, tests).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from clkt import clock
from clkt.config import DaemonSettings, SpecSettings
from clkt.context import ServiceContext
from clkt.report.writer import report_dir, write_report
from storage.engine import Store
from storage.reports import FinishedJobs, ReportRecord, due_reports, record_report

__all__ = ["ReportService", "stored_report_path", "write_report_files"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Failure:
    fingerprint: str  # of the jobs the failed report was built from: other jobs are tried at once
    tries: int
    next_try: float  # on the service's clock (the process's clock: `clkt.clock.monotonic`)


class ReportService:
    """Service `report-writer`: one report per snapshot whose GPU jobs have all finished."""

    name = "report-writer"
    RETRY_BACKOFF_START_S: ClassVar[float] = 30.0
    RETRY_BACKOFF_MAX_S: ClassVar[float] = 3600.0

    def __init__(self, *, data_dir: Path, daemon: DaemonSettings, burst: bool = False, spec: SpecSettings | None = None) -> None:
        """`spec`: its targets' declared cutoffs and buffer, for the reports' knowledge-cutoff section (its alarm)."""
        self.data_dir = data_dir
        self.spec = spec
        self.poll_interval_s = daemon.poll_interval_s
        self.burst = burst
        self.written: list[ReportRecord] = []  # the reports this service wrote, in order
        self.passes = 0  # how many times `run` looked for due reports
        self.clock: Callable[[], float] = clock.monotonic  # the backoff's clock (tests move it)
        self._failures: dict[str, _Failure] = {}

    async def run(self, ctx: ServiceContext) -> None:
        while True:
            await self.write_due(ctx)
            self.passes += 1
            if self.burst:
                return
            if await ctx.sleep(self.poll_interval_s):
                await self.write_due(ctx)  # stopping: the report of a job that just finished is not left behind
                self.passes += 1
                return

    async def write_due(self, ctx: ServiceContext) -> list[ReportRecord]:
        """Write every due report that is not waiting out a backoff; the ones written."""
        async with ctx.store.session() as s:
            due = await due_reports(s)
        now = self.clock()
        out: list[ReportRecord] = []
        for d in due:
            failed = self._failures.get(d.snapshot_id)
            if failed is not None and failed.fingerprint == d.fingerprint and now < failed.next_try:
                continue
            record = await self._write(ctx, d)
            if record is not None:
                out.append(record)
        return out

    async def _write(self, ctx: ServiceContext, due: FinishedJobs) -> ReportRecord | None:
        sid = due.snapshot_id
        try:
            out = await self._write_files(ctx, sid)
            async with ctx.store.transaction() as s:
                record = await record_report(
                    s, snapshot_id=sid, fingerprint=due.fingerprint, jobs=due.jobs,
                    path=stored_report_path(out, self.data_dir),
                )
        except asyncio.CancelledError:
            raise
        except Exception:  # a report that fails never takes the daemon down: logged, tried again later
            before = self._failures.get(sid)
            tries = before.tries + 1 if before is not None and before.fingerprint == due.fingerprint else 1
            delay = min(self.RETRY_BACKOFF_START_S * 2 ** (tries - 1), self.RETRY_BACKOFF_MAX_S)
            self._failures[sid] = _Failure(due.fingerprint, tries, self.clock() + delay)
            log.exception("report of snapshot %s failed (try %d); trying again in %.0f s", sid, tries, delay)
            return None
        self._failures.pop(sid, None)
        self.written.append(record)
        log.info("snapshot %s: every GPU job finished; report written to %s", sid, out / "report.md")
        return record

    async def _write_files(self, ctx: ServiceContext, snapshot_id: str) -> Path:
        return await write_report_files(ctx.store, snapshot_id, data_dir=self.data_dir, spec=self.spec)


async def write_report_files(store: Store, snapshot_id: str, *, data_dir: Path, spec: SpecSettings | None) -> Path:
    """The snapshot's report written beside its folder, then each file moved in (`os.replace`, report.md last): a
    reader, or another process writing the same report (a worker beside the daemon, the jury's stage), never sees a
    file half written."""
    out = report_dir(data_dir, snapshot_id)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        await write_report(store, snapshot_id, tmp, spec=spec)
        await asyncio.to_thread(_move_into, tmp, out)
    finally:
        await asyncio.to_thread(shutil.rmtree, tmp, True)
    return out


def stored_report_path(folder: Path, data_dir: Path) -> str:
    """How the store records a report's folder: relative to the data directory when inside it (a data directory
    moved elsewhere keeps its reports), else absolute."""
    resolved = folder.resolve()
    try:
        return resolved.relative_to(data_dir.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def _move_into(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir(), key=lambda p: (p.name == "report.md", p.name)):
        os.replace(f, dst / f.name)
