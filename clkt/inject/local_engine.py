"""The local engine: each GPU job in a child process on this machine (`python -m clkt.inject.run_job`).

One slot per configured device (`gpu.devices`, or `clkt worker --device`), one job at a time on each; the `cpu`
device has `cpu_jobs` slots (`cpu`, `cpu#2`, ...: `clkt.cpu_share.job_slots`), each a job of its own. The
child reads the snapshot from the export folder the store names and writes everything into
`<data_dir>/jobs/<id>/` (its output goes to `job.log` there); it dies with the daemon (see `run_job`). At a
stop the child is ended (SIGTERM, then SIGKILL) and the next run resumes from its last finished epoch.

A job on the `cpu` device is registered with `clkt.cpu_share` while it runs: the daemon's own model work (the
probe) keeps to the cores the job leaves.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from clkt import cpu_share
from clkt.inject.contract import JobSpec
from clkt.inject.engine import EndKind, EngineState, EngineStatus, JobEnd, JobEngine, RunningJob
from clkt.layout import LOG_FILE

__all__ = ["LocalEngine", "LocalRun"]


class LocalRun(RunningJob):
    """A job process of this machine."""

    KILL_GRACE_S: ClassVar[float] = 10.0  # SIGTERM -> SIGKILL

    def __init__(self, proc: asyncio.subprocess.Process, *, device: str, on_end: Callable[[], None] | None = None) -> None:
        self.proc = proc
        self.where = "local"
        self.device = device
        self._on_end = on_end  # called once: when the process is seen to have exited, or was stopped

    def _ended(self) -> None:
        if self._on_end is not None:
            on_end, self._on_end = self._on_end, None
            on_end()

    async def wait(self, timeout_s: float) -> JobEnd | None:
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=timeout_s)
        except TimeoutError:
            return None
        self._ended()
        return JobEnd(kind=EndKind.exited, returncode=self.proc.returncode, where=self.where)

    async def stop(self) -> None:
        try:
            await self._end_process()
        finally:
            self._ended()  # stopped: its cores are given back even if it could not be reaped

    async def _end_process(self) -> None:
        proc = self.proc
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

    async def hand_back(self) -> str:
        await self.stop()  # its checkpoints stay in the data dir: the next run resumes from the last epoch
        return "shutdown: handed back, resumes from its last epoch"


class LocalEngine(JobEngine):
    name = "local"

    def __init__(self, *, devices: list[str], cpu_jobs: int = 1) -> None:
        self.devices = list(devices)
        self.cpu_jobs = max(1, cpu_jobs)

    def slots(self) -> list[str]:
        out: list[str] = []
        for d in dict.fromkeys(self.devices):
            out += [d] + ([f"{d}#{k}" for k in range(2, self.cpu_jobs + 1)] if d == "cpu" else [])
        return out

    def device_of(self, slot: str) -> str:
        return slot.split("#", 1)[0]

    def status(self) -> EngineStatus:
        return EngineStatus(engine=self.name, state=EngineState.ready)

    async def submit(self, spec: JobSpec, spec_path: Path, *, slot: str) -> RunningJob:
        with (spec.artifacts_dir / LOG_FILE).open("ab") as logf:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clkt.inject.run_job", str(spec_path),
                stdout=logf, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        device = self.device_of(slot)
        if device != "cpu":
            return LocalRun(proc, device=device)
        job_id = spec.job_id
        cpu_share.job_started(job_id, spec.gpu.torch_threads)
        return LocalRun(proc, device=device, on_end=lambda: cpu_share.job_ended(job_id))
