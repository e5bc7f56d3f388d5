"""The GPU consumer: claims GPU jobs and runs each in a child process, one at a time per device.

The event loop never runs torch. For each claimed job the consumer writes `<data_dir>/jobs/<id>/spec.json`,
starts `python -m clkt.inject.run_job` (its output goes to `job.log` beside it), heartbeats the lease while
the child runs, enforces `gpu.job_timeout_s`, and then, in ONE transaction, writes every per-question result
and completes the job (fenced on the lease). The child reports the export's public qids; they are mapped
back to this store's question rows through the snapshot's items (an unknown qid fails the job). Every read and
write goes through the repositories (`storage.gpu_jobs`, `storage.snapshots`); jobs are `GpuJobRecord`s.
A child that fails, crashes or runs out of memory fails that job only; the next job starts as usual. The
job's typed summary (`clkt.evaluate.summary.JobSummary`) is stored completed with the epochs, the target's
identity and the control split's counts. The report is not written here: `clkt.report.service.ReportService`
writes it once every job of the snapshot has finished.

The consumer reads no settings from the context: its sections come in its constructor (`gpu` is the default
job configuration, `daemon` gives the lease and the poll interval, `targets` the spec's target models).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import ClassVar, cast

from pydantic import ValidationError

from clkt._tasks import cancel_and_wait
from clkt.config import DaemonSettings, GpuSettings, RetentionSettings, TargetSettings
from clkt.config.spec import Strategy
from clkt.context import ServiceContext
from clkt.errors import JobError, SnapshotError
from clkt.evaluate.results import ResultItem
from clkt.evaluate.summary import ControlCounts, JobSummary
from clkt.inject.contract import (
    FAILURE_FILE,
    LOG_FILE,
    OUTCOME_FILE,
    PROGRESS_FILE,
    JobFailure,
    JobOutcome,
    JobProgress,
    JobSpec,
    write_json_atomic,
)
from clkt.logs import redact
from clkt.retention.apply import after_job_commit
from clkt.roster.exclusions import excluded_public_ids
from clkt.snapshots.stored import question_rows_by_qid
from storage.enums import LeaseStatus
from storage.gpu_jobs import (
    GpuJobRecord,
    LeaseLost,
    ResultRecord,
    claim_gpu_jobs,
    complete_gpu_job,
    fail_gpu_job,
    heartbeat_gpu_job,
    release_gpu_job,
    write_job_results,
)
from storage.snapshots import find_snapshot

__all__ = ["GpuConsumer", "JobRun", "completed_summary", "control_counts", "job_dir", "result_records"]

log = logging.getLogger(__name__)


def job_dir(data_dir: Path, job_id: int) -> Path:
    return data_dir / "jobs" / str(job_id)


def result_records(outcome: JobOutcome, rows_by_qid: dict[int, int], *, snapshot_id: str) -> list[ResultRecord]:
    """The outcome's results keyed by this store's question rows (`rows_by_qid`: public qid -> Question.id)."""
    unknown = sorted({r.qid for r in outcome.results if r.qid not in rows_by_qid})
    if unknown:
        shown = ", ".join(map(str, unknown[:5])) + (f" (+{len(unknown) - 5} more)" if len(unknown) > 5 else "")
        raise JobError(
            f"the results name {len(unknown)} qid(s) that are not items of snapshot {snapshot_id}: {shown} "
            "(was the export folder replaced by another snapshot's?)"
        )
    return [
        ResultRecord(
            question_id=rows_by_qid[r.qid], lang=r.lang, variant=r.variant.value, scorer=r.scorer, split=r.split,
            predicted=r.predicted, correct=r.correct, raw=r.raw,
        )
        for r in outcome.results
    ]


def control_counts(items: list[ResultItem]) -> dict[str, dict[str, ControlCounts]]:
    """The control split's answers as counts: scorer -> test language -> n, base_correct, injected_correct,
    gained (base wrong, injected right) and lost (base right, injected wrong), over the questions that have
    both answers. They go into the job summary's `control`: control questions have no store rows."""
    pairs: dict[tuple[str, str, int], dict[str, bool]] = {}
    for r in items:
        pairs.setdefault((r.scorer, r.lang, r.qid), {})[r.variant.value] = r.correct
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (scorer, lang, _), v in sorted(pairs.items()):
        if "base" not in v or "injected" not in v:
            continue
        c = out.setdefault(scorer, {}).setdefault(lang, dict.fromkeys(("n", "base_correct", "injected_correct", "gained", "lost"), 0))
        b, i = v["base"], v["injected"]
        c["n"] += 1
        c["base_correct"] += b
        c["injected_correct"] += i
        c["gained"] += (not b) and i
        c["lost"] += b and not i
    return {scorer: {lang: ControlCounts(**c) for lang, c in langs.items()} for scorer, langs in out.items()}


def completed_summary(outcome: JobOutcome, target: TargetSettings) -> JobSummary:
    """The job's summary as stored: what the job measured, with its epochs, the target's identity and the
    control split's counts."""
    return outcome.summary.model_copy(update={
        "epochs": list(outcome.epochs), "target_family": target.family, "target_size_b": target.size_b,
        "target_model_id": target.model, "control": control_counts(outcome.control_results) if outcome.control_results else {},
    })


@dataclass(frozen=True, slots=True)
class JobRun:
    """How one job ended, as the consumer saw it."""

    job_id: int
    status: LeaseStatus | None  # None: handed back (shutdown) or the lease was lost
    detail: str = ""


class JobSetupError(JobError):
    """The job cannot run as configured (unknown target, no snapshot export, invalid job config): it fails
    for good at once, without spending its retries."""


class GpuConsumer:
    """Service `gpu-consumer`: one slot per configured device, each running one job at a time."""

    name = "gpu-consumer"
    RETRY_BACKOFF_S: ClassVar[float] = 30.0  # before a crashed or timed-out job is tried again
    KILL_GRACE_S: ClassVar[float] = 10.0  # SIGTERM -> SIGKILL
    PROGRESS_LOG_S: ClassVar[float] = 30.0
    POLL_S: ClassVar[float] = 0.5  # how often the child is checked

    def __init__(
        self, *, gpu: GpuSettings, daemon: DaemonSettings, targets: Sequence[TargetSettings], data_dir: Path,
        devices: list[str] | None = None, burst: bool = False, retention: RetentionSettings | None = None,
    ) -> None:
        self.gpu = gpu  # the default job configuration (a job's stored config overrides it) and the job timeout
        self.lease = timedelta(seconds=daemon.lease_s)
        self.poll_interval_s = daemon.poll_interval_s
        self.targets = list(targets)
        self.data_dir = data_dir
        self.devices = list(devices or gpu.devices)
        self.burst = burst  # stop when no job is claimable (tests, `clkt worker --burst`)
        self.retention = retention or RetentionSettings()  # what a committed job's folder keeps (clkt.retention)
        self.finished: list[JobRun] = []

    async def run(self, ctx: ServiceContext) -> None:
        tasks = [
            asyncio.create_task(self._slot(ctx, device, i), name=f"gpu-consumer:{device}:{i}")
            for i, device in enumerate(self.devices)
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_and_wait(tasks)

    # -- one device ---------------------------------------------------------------------------------------------

    async def _slot(self, ctx: ServiceContext, device: str, index: int) -> None:
        lease = self.lease
        while not ctx.stopping.is_set():
            if not ctx.may_claim():
                if await ctx.sleep(self.poll_interval_s):
                    return
                continue
            async with ctx.store.transaction() as s:
                jobs = await claim_gpu_jobs(s, owner=ctx.owner, lease=lease, limit=1)
            if not jobs:
                if self.burst or await ctx.sleep(self.poll_interval_s):
                    return
                continue
            self.finished.append(await self._run_job(ctx, jobs[0], device, lease))

    async def _job_spec(self, ctx: ServiceContext, job: GpuJobRecord, device: str) -> JobSpec:
        target = next((t for t in self.targets if t.name == job.target_model), None)
        if target is None:
            raw = job.config.get("target") if isinstance(job.config, dict) else None
            target = TargetSettings.model_validate(raw) if raw else None
        if target is None:
            names = [t.name for t in self.targets]
            raise JobSetupError(f"target model {job.target_model!r} is not in the spec (targets: {names})")
        async with ctx.store.session() as s:
            snap = await find_snapshot(s, job.snapshot_id)
            try:  # the target's exclusions on the snapshot: the job runs on the rest
                exclude = await excluded_public_ids(s, job.snapshot_id, job.target_model) if snap is not None else []
            except SnapshotError as e:
                raise JobSetupError(str(e)) from e
        if snap is None or not snap.export_path:
            raise JobSetupError(f"snapshot {job.snapshot_id} has no export directory")
        try:
            cfg = {k: v for k, v in (job.config or {}).items() if k in GpuSettings.model_fields}
            gpu = GpuSettings.model_validate(cfg) if cfg else self.gpu
        except ValidationError as e:
            raise JobSetupError(f"job config is invalid: {e.errors()[0]['msg']}") from e
        data_dir = self.data_dir.resolve()
        return JobSpec(
            job_id=job.id, snapshot_id=job.snapshot_id, snapshot_dir=Path(snap.export_path).resolve(), target=target,  # noqa: ASYNC240 - once per job
            # a stored name (str); JobSpec validates it against the Literal (else ValidationError: a permanent failure)
            strategy=cast(Strategy, job.strategy), train_lang=job.train_lang, gpu=gpu, data_dir=data_dir,
            artifacts_dir=job_dir(data_dir, job.id), device=device,
            base_cache_dir=data_dir / "jobs" / "base" / job.snapshot_id, exclude_entities=exclude,
        )

    async def _run_job(self, ctx: ServiceContext, job: GpuJobRecord, device: str, lease: timedelta) -> JobRun:
        jid = job.id
        label = f"job {jid} ({job.target_model} / {job.strategy} / train {job.train_lang} / {job.snapshot_id})"
        try:
            spec = await self._job_spec(ctx, job, device)
        except (JobSetupError, ValidationError) as e:
            return await self._fail(ctx, jid, f"{label}: {e}", permanent=True)
        spec.artifacts_dir.mkdir(parents=True, exist_ok=True)
        for stale in (OUTCOME_FILE, FAILURE_FILE):
            (spec.artifacts_dir / stale).unlink(missing_ok=True)
        spec_path = spec.artifacts_dir / "spec.json"
        write_json_atomic(spec_path, spec)
        log.info("%s: starting on %s (attempt %d of %d)", label, device, job.attempts, job.max_attempts)
        with (spec.artifacts_dir / LOG_FILE).open("ab") as logf:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clkt.inject.run_job", str(spec_path),
                stdout=logf, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            ended = await self._supervise(ctx, proc, jid, spec, lease, label)
        except asyncio.CancelledError:
            await self._stop_child(proc)
            await asyncio.shield(self._release(ctx, jid, "shutdown: the job was cancelled"))
            raise
        if ended is not None:
            return ended
        rc = proc.returncode
        if rc == 0 and (spec.artifacts_dir / OUTCOME_FILE).is_file():
            return await self._store_outcome(ctx, jid, spec, label)
        failure = _read_failure(spec.artifacts_dir / FAILURE_FILE)
        if failure is not None:
            return await self._fail(ctx, jid, f"{label}: {failure.kind.value}: {failure.message}", permanent=failure.permanent)
        how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
        hint = " (out of host memory?)" if rc == -signal.SIGKILL else ""
        return await self._fail(ctx, jid, f"{label}: the job process died ({how}){hint}; see {spec.artifacts_dir / LOG_FILE}")

    async def _supervise(
        self, ctx: ServiceContext, proc: asyncio.subprocess.Process, jid: int, spec: JobSpec, lease: timedelta, label: str
    ) -> JobRun | None:
        """Wait for the child while heartbeating; a JobRun when the consumer ended the job itself."""
        started = time.monotonic()
        beat_every = max(1.0, lease.total_seconds() / 3)
        next_beat = started + beat_every
        next_log = started + self.PROGRESS_LOG_S
        timeout_s = self.gpu.job_timeout_s
        while True:
            try:
                await asyncio.wait_for(proc.wait(), timeout=self.POLL_S)
                return None
            except TimeoutError:
                pass
            now = time.monotonic()
            if ctx.stopping.is_set():
                await self._stop_child(proc)
                await asyncio.shield(self._release(ctx, jid, "shutdown: handed back, resumes from its last epoch"))
                return JobRun(jid, None, "handed back at shutdown")
            if now - started > timeout_s:
                await self._stop_child(proc)
                return await self._fail(ctx, jid, f"{label}: timed out after {timeout_s:.0f}s (gpu.job_timeout_s)")
            if now >= next_beat:
                next_beat = now + beat_every
                try:
                    async with ctx.store.transaction() as s:
                        await heartbeat_gpu_job(s, jid, owner=ctx.owner, lease=lease)
                except LeaseLost:
                    await self._stop_child(proc)
                    log.warning("%s: lease lost; stopped the job process", label)
                    return JobRun(jid, None, "lease lost")
            if now >= next_log:
                next_log = now + self.PROGRESS_LOG_S
                p = _read_progress(spec.artifacts_dir / PROGRESS_FILE)
                if p is not None:
                    extra = f" epoch {p.epoch}" if p.epoch is not None else ""
                    extra += f" loss {p.loss:.3f}" if p.loss is not None else ""
                    log.info("%s: %s %d/%d%s", label, p.phase, p.done, p.total, extra)

    async def _stop_child(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, self.KILL_GRACE_S), (signal.SIGKILL, 30.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                await asyncio.wait_for(proc.wait(), timeout=wait_s)
                return
            except TimeoutError:
                continue

    async def _store_outcome(self, ctx: ServiceContext, jid: int, spec: JobSpec, label: str) -> JobRun:
        try:
            outcome = JobOutcome.model_validate_json((spec.artifacts_dir / OUTCOME_FILE).read_bytes())
        except (OSError, ValidationError) as e:
            return await self._fail(ctx, jid, f"{label}: unreadable outcome file: {e}")
        try:
            async with ctx.store.session() as s:
                rows_by_qid = await question_rows_by_qid(s, spec.snapshot_id)
            records = result_records(outcome, rows_by_qid, snapshot_id=spec.snapshot_id)
        except (JobError, SnapshotError) as e:
            return await self._fail(ctx, jid, f"{label}: {e}", permanent=True)
        summary = completed_summary(outcome, spec.target)
        try:
            async with ctx.store.transaction() as s:
                n = await write_job_results(s, jid, records)
                await complete_gpu_job(
                    s, jid, owner=ctx.owner, best_epoch=outcome.best_epoch, device=outcome.device,
                    artifacts_dir=str(spec.artifacts_dir), summary=summary.model_dump(mode="json"),
                )
        except LeaseLost:
            log.warning("%s: finished, but its lease was lost; results not written (another worker owns it)", label)
            return JobRun(jid, None, "lease lost")
        await after_job_commit(ctx.store, job_id=jid, data_dir=self.data_dir, retention=self.retention)
        ctx.metrics.gpu_jobs.labels(outcome="done").inc()
        log.info("%s: done, best epoch %d, %d results", label, outcome.best_epoch, n)
        return JobRun(jid, LeaseStatus.done)

    async def _fail(self, ctx: ServiceContext, jid: int, error: str, *, permanent: bool = False) -> JobRun:
        error = redact(error)
        try:
            async with ctx.store.transaction() as s:
                status = await fail_gpu_job(
                    s, jid, owner=ctx.owner, error=error, permanent=permanent,
                    retry_in=timedelta(seconds=self.RETRY_BACKOFF_S),
                )
        except LeaseLost:
            return JobRun(jid, None, "lease lost")
        ctx.metrics.gpu_jobs.labels(outcome="failed" if status is LeaseStatus.failed else "retry").inc()
        log.error("%s%s", error, "" if status is LeaseStatus.failed else " (will retry)")
        return JobRun(jid, status, error)

    async def _release(self, ctx: ServiceContext, jid: int, reason: str) -> None:
        try:
            async with ctx.store.transaction() as s:
                await release_gpu_job(s, jid, owner=ctx.owner, reason=reason)
        except Exception:  # shutdown bookkeeping: the lease expires anyway
            log.exception("could not hand back GPU job %d", jid)


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
