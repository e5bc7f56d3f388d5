"""The GPU consumer: claims GPU jobs and hands each to the engine (`clkt.inject.engine`), one per slot.

The event loop never runs torch. For each claimed job the consumer writes its spec (`clkt.inject.spec_builder`)
to `<data_dir>/jobs/<id>/spec.json` (the folder's names: `clkt.layout`), submits it to the engine
(`LocalEngine`: a child process on this machine, one slot per device; `RayEngine`: Ray work on a cluster,
`gpu.ray_max_jobs` slots), heartbeats the lease while it runs, enforces `gpu.job_timeout_s`, then commits the
outcome (`clkt.inject.commit`: every result and the job's completion in ONE transaction, fenced on the lease)
and calls its commit hook (`on_commit`, wired in `clkt.services`: the retention of the job's folder). Whatever
the engine, the run ends with its files in that folder, and this daemon commits them once. Every read and write
goes through the repositories; jobs are `GpuJobRecord`s.

How a run ends decides what happens to the job: a failure that retrying cannot fix fails it once with its
reason; an out-of-memory failure is retried at a smaller batch size (stored in the job's config) until none is
left; a crash or a timeout is retried after `RETRY_BACKOFF_S`; a run whose cluster node was lost runs again at
once elsewhere (an attempt spent); a run whose engine went away (the cluster unreachable) is handed back
without spending one. A run that ended and was brought back (`ended.json`, the Ray driver) while this daemon died
before committing it is not run again: the restarted daemon commits that outcome (results or failure). Jobs are
claimed only while the engine is ready; why they wait is recorded in the store
(`clkt.inject.engine_status`). The report is not written here: `clkt.report.service.ReportService` writes it
once every job of the snapshot has finished.

The consumer reads no settings from the context: its sections come in its constructor (`gpu` is the default
job configuration and the engine's, `daemon` gives the lease and the poll interval, `targets` the spec's target
models).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationError

from clkt import clock, cpu_share
from clkt._tasks import cancel_and_wait
from clkt.config import DaemonSettings, GpuSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.inject.commit import CommitError, CommitHook, commit_outcome
from clkt.inject.contract import (
    FailureKind,
    JobFailure,
    JobProgress,
    JobSpec,
    RunEnded,
    run_fingerprint,
    write_json_atomic,
)
from clkt.inject.engine import EndKind, JobEnd, JobEngine, RunningJob
from clkt.inject.engine_status import record_status, watch_engine
from clkt.inject.local_engine import LocalEngine
from clkt.inject.spec_builder import JobSetupError, SpecBuilder
from clkt.layout import ENDED_FILE, FAILURE_FILE, JOBS_DIR, LOG_FILE, OUTCOME_FILE, PROGRESS_FILE, SPEC_FILE
from clkt.logs import redact
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import (
    GpuJobRecord,
    LeaseLost,
    claim_gpu_jobs,
    fail_gpu_job,
    heartbeat_gpu_job,
    release_gpu_job,
    set_gpu_job_config,
)

__all__ = ["GpuConsumer", "JobRun", "build_engine", "store_key"]

log = logging.getLogger(__name__)


def store_key(store: Store) -> str:
    """A short stable id of the store, naming its runs on a shared cluster."""
    where = store.sqlite_file
    ident = str(where.resolve()) if where is not None else store.url
    return hashlib.sha256(ident.encode()).hexdigest()[:10]


def build_engine(gpu: GpuSettings, *, data_dir: Path, devices: list[str], store_key: str, log_dir: Path) -> JobEngine:
    """The engine `gpu.engine` names: the local one on `devices`, or Ray (`store_key` names this store's runs on a
    shared cluster; `log_dir` receives the Ray driver's log)."""
    if gpu.engine == "ray":
        from clkt.inject.ray_engine import RayEngine

        return RayEngine(gpu=gpu, data_dir=data_dir, store_key=store_key, log_dir=log_dir)
    return LocalEngine(devices=devices, cpu_jobs=cpu_share.job_slots(gpu.torch_threads, gpu.cpu_jobs))


@dataclass(frozen=True, slots=True)
class JobRun:
    """How one job ended, as the consumer saw it."""

    job_id: int
    status: LeaseStatus | None  # None: handed back (shutdown) or the lease was lost
    detail: str = ""


class GpuConsumer:
    """Service `gpu-consumer`: one claiming loop per engine slot, each running one job at a time."""

    name = "gpu-consumer"
    RETRY_BACKOFF_S: ClassVar[float] = 30.0  # before a crashed or timed-out job is tried again
    LOST_RETRY_S: ClassVar[float] = 1.0  # before a job whose cluster node was lost runs again
    UNAVAILABLE_DEFER_S: ClassVar[float] = 5.0  # a job handed back because the engine went away
    PROGRESS_LOG_S: ClassVar[float] = 30.0  # real seconds between a running job's progress lines, whatever the calendar
    POLL_S: ClassVar[float] = 0.5  # how often a run is checked
    STATUS_RECORD_S: ClassVar[float] = 60.0  # the engine's status is written on each change and at least this often

    def __init__(
        self, *, gpu: GpuSettings, daemon: DaemonSettings, targets: Sequence[TargetSettings], data_dir: Path,
        devices: list[str] | None = None, burst: bool = False, on_commit: CommitHook | None = None,
        engine: JobEngine | None = None,
    ) -> None:
        self.gpu = gpu  # the default job configuration (a job's stored config overrides it), the engine and the timeout
        self.lease = timedelta(seconds=daemon.lease_s)
        self.poll_interval_s = daemon.poll_interval_s
        self.targets = list(targets)
        self.data_dir = data_dir
        self.devices = list(devices or gpu.devices)
        self.burst = burst  # stop when no job is claimable (tests, `clkt worker --burst`)
        self.on_commit = on_commit  # after each job's commit (clkt.services wires the retention of its folder)
        self.specs = SpecBuilder(gpu=gpu, targets=self.targets, data_dir=data_dir)
        self.engine = engine  # None: built at `run` from `gpu.engine`
        self.finished: list[JobRun] = []

    async def run(self, ctx: ServiceContext) -> None:
        engine = self.engine or build_engine(
            self.gpu, data_dir=self.data_dir.resolve(), devices=self.devices, store_key=store_key(ctx.store),
            log_dir=self.data_dir / JOBS_DIR,
        )
        self.engine = engine
        await engine.start()
        tasks = [
            asyncio.create_task(self._slot(ctx, engine, slot), name=f"gpu-consumer:{slot}")
            for slot in engine.slots()
        ]
        watch = asyncio.create_task(
            watch_engine(ctx, engine, poll_s=min(1.0, self.poll_interval_s), record_every_s=self.STATUS_RECORD_S),
            name="gpu-consumer:engine-status",
        )
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_and_wait([*tasks, watch])
            await engine.close()
            await asyncio.shield(record_status(ctx, engine.status()))

    # -- one slot -----------------------------------------------------------------------------------------------

    async def _slot(self, ctx: ServiceContext, engine: JobEngine, slot: str) -> None:
        lease = self.lease
        while not ctx.stopping.is_set():
            if not ctx.may_claim() or not engine.status().claimable:
                if await ctx.sleep(self.poll_interval_s):
                    return
                continue
            async with ctx.store.transaction() as s:
                jobs = await claim_gpu_jobs(s, owner=ctx.owner, lease=lease, limit=1)
            if not jobs:
                if self.burst or await ctx.sleep(self.poll_interval_s):
                    return
                continue
            self.finished.append(await self._run_job(ctx, engine, jobs[0], slot, lease))

    async def _job_spec(self, ctx: ServiceContext, job: GpuJobRecord, device: str) -> JobSpec:
        return await self.specs.build(ctx.store, job, device=device)

    async def _run_job(self, ctx: ServiceContext, engine: JobEngine, job: GpuJobRecord, slot: str, lease: timedelta) -> JobRun:
        jid = job.id
        seed = f" / seed {job.seed}" if job.seed else ""
        label = f"job {jid} ({job.target_model} / {job.strategy} / train {job.train_lang}{seed} / {job.snapshot_id})"
        try:
            spec = await self._job_spec(ctx, job, engine.device_of(slot))
        except (JobSetupError, ValidationError) as e:
            return await self._fail(ctx, jid, f"{label}: {e}", permanent=True)
        spec.artifacts_dir.mkdir(parents=True, exist_ok=True)
        taken = _ended_before(spec)
        if taken is not None:  # its run ended (files brought back) and this daemon died before committing them
            log.info("%s: its run already ended (exit %s on %s): taking its outcome instead of running it again", label,
                     taken.returncode, taken.where or "?")
            return await self._took(ctx, taken, job, spec, label)
        for stale in (OUTCOME_FILE, FAILURE_FILE, ENDED_FILE):
            (spec.artifacts_dir / stale).unlink(missing_ok=True)
        spec_path = spec.artifacts_dir / SPEC_FILE
        write_json_atomic(spec_path, spec)
        log.info("%s: starting on %s (attempt %d of %d)", label, slot, job.attempts, job.max_attempts)
        run = await engine.submit(spec, spec_path, slot=slot)
        try:
            ended = await self._supervise(ctx, run, jid, spec, lease, label)
        except asyncio.CancelledError:
            why = await run.hand_back()
            await asyncio.shield(self._release(ctx, jid, f"{why} (the job was cancelled)"))
            raise
        if isinstance(ended, JobRun):
            return ended
        return await self._took(ctx, ended, job, spec, label)

    async def _took(self, ctx: ServiceContext, end: JobEnd, job: GpuJobRecord, spec: JobSpec, label: str) -> JobRun:
        """`_ended`, then the run's end record is consumed (a retried job never takes the same end twice)."""
        out = await self._ended(ctx, end, job, spec, label)
        (spec.artifacts_dir / ENDED_FILE).unlink(missing_ok=True)
        return out

    async def _ended(self, ctx: ServiceContext, end: JobEnd, job: GpuJobRecord, spec: JobSpec, label: str) -> JobRun:
        """Store or fail the job as its run ended."""
        jid = job.id
        if end.kind is EndKind.lost:
            return await self._fail(ctx, jid, f"{label}: {end.detail or 'the node running it was lost'}; it runs again",
                                    retry_s=self.LOST_RETRY_S)
        if end.kind is EndKind.unavailable:
            reason = f"handed back: {end.detail or 'the GPU engine went away'}"
            await asyncio.shield(self._release(ctx, jid, f"{label}: {reason}", defer_s=self.UNAVAILABLE_DEFER_S))
            log.warning("%s: %s", label, reason)
            return JobRun(jid, None, reason)
        rc = end.returncode
        if rc == 0 and (spec.artifacts_dir / OUTCOME_FILE).is_file():
            return await self._store_outcome(ctx, jid, spec, label, ran_on=end.where or None)
        failure = _read_failure(spec.artifacts_dir / FAILURE_FILE)
        if failure is not None:
            return await self._job_failed(ctx, job, failure, label)
        how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
        hint = " (out of host memory?)" if rc == -signal.SIGKILL else ""
        tail = f": {end.detail}" if end.detail else ""
        return await self._fail(ctx, jid, f"{label}: the job process died ({how}){hint}{tail}; see {spec.artifacts_dir / LOG_FILE}")

    async def _job_failed(self, ctx: ServiceContext, job: GpuJobRecord, failure: JobFailure, label: str) -> JobRun:
        error = f"{label}: {failure.kind.value}: {failure.message}"
        retry = failure.retry_with
        if failure.kind is FailureKind.out_of_memory and retry is not None and not failure.permanent:
            changes = retry.model_dump(exclude_none=True)
            config = GpuSettings.model_validate({**(job.config or self.gpu).model_dump(), **changes})
            said = ", ".join(f"{k} = {v}" for k, v in changes.items())
            return await self._fail(ctx, job.id, f"{error}; retried with {said}", config=config)
        return await self._fail(ctx, job.id, error, permanent=failure.permanent)

    async def _supervise(
        self, ctx: ServiceContext, run: RunningJob, jid: int, spec: JobSpec, lease: timedelta, label: str
    ) -> JobEnd | JobRun:
        """Wait for the run while heartbeating; how it ended, or a JobRun when the consumer ended it itself."""
        started = clock.monotonic()
        started_real = time.monotonic()  # the timeout bounds work: real seconds, whatever the calendar's speed
        beat_every = max(1.0, lease.total_seconds() / 3)
        next_beat = started + beat_every
        next_log = started_real + self.PROGRESS_LOG_S  # real time: at 14,400x, 30 simulated s would log every poll
        timeout_s = self.gpu.job_timeout_s
        while True:
            end = await run.wait(self.POLL_S)
            if end is not None:
                return end
            now = clock.monotonic()
            if ctx.stopping.is_set():
                why = await run.hand_back()
                await asyncio.shield(self._release(ctx, jid, why))
                return JobRun(jid, None, "handed back at shutdown")
            if time.monotonic() - started_real > timeout_s:
                await run.stop()
                return await self._fail(ctx, jid, f"{label}: timed out after {timeout_s:.0f}s (gpu.job_timeout_s)")
            if now >= next_beat:
                next_beat = now + beat_every
                try:
                    async with ctx.store.transaction() as s:
                        await heartbeat_gpu_job(s, jid, owner=ctx.owner, lease=lease)
                except LeaseLost:
                    await run.stop()
                    log.warning("%s: lease lost; stopped the job", label)
                    return JobRun(jid, None, "lease lost")
            if time.monotonic() >= next_log:
                next_log = time.monotonic() + self.PROGRESS_LOG_S
                p = _read_progress(spec.artifacts_dir / PROGRESS_FILE)
                if p is not None:
                    extra = f" epoch {p.epoch}" if p.epoch is not None else ""
                    extra += f" loss {p.loss:.3f}" if p.loss is not None else ""
                    log.info("%s: %s %d/%d%s", label, p.phase, p.done, p.total, extra)

    async def _store_outcome(self, ctx: ServiceContext, jid: int, spec: JobSpec, label: str, *, ran_on: str | None = None) -> JobRun:
        try:
            done = await commit_outcome(ctx.store, spec, owner=ctx.owner, ran_on=ran_on)
        except CommitError as e:
            return await self._fail(ctx, jid, f"{label}: {e}", permanent=e.permanent)
        except LeaseLost:
            log.warning("%s: finished, but its lease was lost; results not written (another worker owns it)", label)
            return JobRun(jid, None, "lease lost")
        if self.on_commit is not None:
            try:
                await self.on_commit(ctx.store, job_id=jid)
            except Exception:  # the job is committed: what follows a commit never undoes or fails it
                log.exception("%s: the commit hook failed", label)
        ctx.metrics.gpu_jobs.labels(outcome="done").inc()
        log.info("%s: done, best epoch %d, %d results%s", label, done.outcome.best_epoch, done.results,
                 f" (ran on {ran_on})" if ran_on else "")
        return JobRun(jid, LeaseStatus.done)

    async def _fail(
        self, ctx: ServiceContext, jid: int, error: str, *, permanent: bool = False, retry_s: float | None = None,
        config: GpuSettings | None = None,
    ) -> JobRun:
        error = redact(error)
        try:
            async with ctx.store.transaction() as s:
                if config is not None:
                    await set_gpu_job_config(s, jid, owner=ctx.owner, config=config)
                status = await fail_gpu_job(
                    s, jid, owner=ctx.owner, error=error, permanent=permanent,
                    retry_in=timedelta(seconds=self.RETRY_BACKOFF_S if retry_s is None else retry_s),
                )
        except LeaseLost:
            return JobRun(jid, None, "lease lost")
        ctx.metrics.gpu_jobs.labels(outcome="failed" if status is LeaseStatus.failed else "retry").inc()
        log.error("%s%s", error, "" if status is LeaseStatus.failed else " (will retry)")
        return JobRun(jid, status, error)

    async def _release(self, ctx: ServiceContext, jid: int, reason: str, *, defer_s: float = 0.0) -> None:
        try:
            async with ctx.store.transaction() as s:
                await release_gpu_job(s, jid, owner=ctx.owner, reason=reason,
                                      defer=timedelta(seconds=defer_s) if defer_s else None)
        except Exception:  # shutdown bookkeeping: the lease expires anyway
            log.exception("could not hand back GPU job %d", jid)


def _ended_before(spec: JobSpec) -> JobEnd | None:
    """The end of a run of this very spec whose files are in its folder (`ENDED_FILE`), if any."""
    try:
        rec = RunEnded.model_validate_json((spec.artifacts_dir / ENDED_FILE).read_bytes())
    except (OSError, ValidationError):
        return None
    if rec.fingerprint != run_fingerprint(spec):
        return None
    return JobEnd(kind=EndKind.exited, returncode=rec.returncode, where=rec.where)


def _read_failure(path: Path) -> JobFailure | None:
    try:
        return JobFailure.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def _read_progress(path: Path) -> JobProgress | None:
    try:
        return JobProgress.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
