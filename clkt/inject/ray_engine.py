"""The Ray engine (`[gpu] engine = "ray"`): each GPU job runs as Ray work on an existing cluster.

The daemon keeps Ray out of its own process: `RayEngine` runs one driver child (`python -m
clkt.inject.ray_driver`, its log `<data_dir>/jobs/ray-driver.log`) that connects to `gpu.ray_address`, and
talks to it in JSON lines (`clkt.inject.ray_protocol`). The driver ships each job's inputs to the node Ray
places it on and brings its outputs back into `<data_dir>/jobs/<id>/`; the consumer then commits them as it
does a local run's (`clkt.inject.consumer`), once, fenced on the job's lease.

- Slots: `gpu.ray_max_jobs` jobs in flight; each asks Ray for `num_gpus` (fractions share a GPU), `num_cpus`
  and the custom `resources`.
- Status: `connecting` until the driver reports the cluster; `ready` with its nodes; `unreachable` (the
  reason) while it cannot connect, retried with backoff (`RESTART_BACKOFF_*`); `unschedulable` when no alive
  node offers what one job asks for. The consumer claims only while it is `ready`.
- A run whose node is lost ends `lost` (the consumer runs it again); a run whose driver went away (the cluster
  unreachable, the driver killed) ends `unavailable` (handed back without spending an attempt: the run itself
  may go on, and the next driver finds it by name). At a stop the runs are left on the cluster the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path
from typing import ClassVar

from pydantic import TypeAdapter, ValidationError

from clkt import clock
from clkt._tasks import cancel_and_wait
from clkt.config import GpuSettings
from clkt.inject.contract import JobSpec
from clkt.inject.engine import EndKind, EngineState, EngineStatus, JobEnd, JobEngine, RunningJob
from clkt.inject.ray_protocol import (
    Command,
    DriverConfig,
    EndedEvent,
    Event,
    NodeInfo,
    StartedEvent,
    StatusEvent,
    StopCommand,
    SubmitCommand,
    fits,
    job_request,
)

__all__ = ["DRIVER_LOG", "RayEngine", "RayRun", "describe_nodes"]

log = logging.getLogger(__name__)

DRIVER_LOG = "ray-driver.log"
_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


def describe_nodes(nodes: list[NodeInfo]) -> str:
    alive = [n for n in nodes if n.alive]

    def res(n: NodeInfo) -> str:
        return ", ".join(f"{k} {v:g}" for k, v in sorted(n.resources.items())) or "nothing"

    return f"{len(alive)} node(s) alive: " + "; ".join(f"{n.host} ({res(n)})" for n in alive)


class RayRun(RunningJob):
    STOP_WAIT_S: ClassVar[float] = 60.0

    def __init__(self, engine: RayEngine, job_id: int) -> None:
        self.engine = engine
        self.job_id = job_id
        self.where = "ray"
        self.end: JobEnd | None = None
        self._done = asyncio.Event()

    def finish(self, end: JobEnd) -> None:
        if self.end is None:
            self.end = end
            self._done.set()

    async def wait(self, timeout_s: float) -> JobEnd | None:
        try:
            await asyncio.wait_for(self._done.wait(), timeout=timeout_s)
        except TimeoutError:
            return None
        return self.end

    async def stop(self) -> None:
        if self.end is not None:
            return
        await self.engine.send(StopCommand(job_id=self.job_id))
        if await self.wait(self.STOP_WAIT_S) is None:
            self.finish(JobEnd(kind=EndKind.unavailable, detail="the Ray driver did not confirm the stop", where=self.where))

    async def hand_back(self) -> str:
        """Left running on the cluster: the next daemon's driver finds it by name (or it ends on its own)."""
        self.engine.forget(self.job_id)
        return "shutdown: handed back; its run goes on on the Ray cluster and is found again at the next start"


class RayEngine(JobEngine):
    name = "ray"
    RESTART_BACKOFF_START_S: ClassVar[float] = 2.0
    RESTART_BACKOFF_MAX_S: ClassVar[float] = 60.0
    SILENT_S: ClassVar[float] = 90.0  # real seconds without a line from the driver (it reports every few): killed
    STATUS_EVERY_S: ClassVar[float] = 5.0
    CONNECT_TIMEOUT_S: ClassVar[float] = 60.0
    CLOSE_WAIT_S: ClassVar[float] = 10.0

    def __init__(self, *, gpu: GpuSettings, data_dir: Path, store_key: str, log_dir: Path) -> None:
        if not gpu.ray_address:
            raise ValueError('engine = "ray" needs gpu.ray_address')
        self.gpu = gpu
        self.address = gpu.ray_address
        self.data_dir = data_dir
        self.store_key = store_key
        self.log_path = log_dir / DRIVER_LOG
        self.request = job_request(num_gpus=gpu.num_gpus, num_cpus=gpu.num_cpus, resources=dict(gpu.resources))
        self._state = EngineStatus(engine=self.name, state=EngineState.connecting, address=self.address,
                                   detail=f"connecting to the Ray cluster at {self.address}")
        self._nodes: list[NodeInfo] = []
        self._runs: dict[int, RayRun] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.drivers_started = 0

    # -- the engine ---------------------------------------------------------------------------------------------

    def slots(self) -> list[str]:
        return [f"ray:{i}" for i in range(self.gpu.ray_max_jobs)]

    def status(self) -> EngineStatus:
        st = self._state
        if st.state is EngineState.ready and not fits(self.request, self._nodes):
            asked = ", ".join(f"{k} {v:g}" for k, v in sorted(self.request.items()))
            return EngineStatus(
                engine=self.name, state=EngineState.unschedulable, address=self.address,
                detail=f"a GPU job asks for {asked} (gpu.num_gpus, num_cpus, resources) and no node of the cluster "
                       f"offers it; {describe_nodes(self._nodes)}",
            )
        return st

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._supervise(), name="ray-engine:driver")

    async def close(self) -> None:
        self._closing = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError, RuntimeError):
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=self.CLOSE_WAIT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if self._task is not None:
            await cancel_and_wait([self._task])
        self._state = EngineStatus(engine=self.name, state=EngineState.stopped, address=self.address,
                                   detail="the daemon stopped; runs in flight stay on the cluster")

    async def submit(self, spec: JobSpec, spec_path: Path, *, slot: str) -> RunningJob:
        run = RayRun(self, spec.job_id)
        self._runs[spec.job_id] = run
        if not await self.send(SubmitCommand(job_id=spec.job_id, spec_path=str(spec_path))):
            run.finish(JobEnd(kind=EndKind.unavailable, detail=self._state.detail, where="ray"))
        return run

    def forget(self, job_id: int) -> None:
        self._runs.pop(job_id, None)

    async def send(self, cmd: Command) -> bool:
        proc = self._proc
        if proc is None or proc.returncode is not None or proc.stdin is None:
            return False
        try:
            proc.stdin.write((cmd.model_dump_json() + "\n").encode())
            await proc.stdin.drain()
        except (OSError, RuntimeError):
            return False
        return True

    # -- the driver -------------------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        backoff = self.RESTART_BACKOFF_START_S
        while not self._closing:
            became_ready = await self._run_driver()
            if self._closing:
                return
            if became_ready:
                backoff = self.RESTART_BACKOFF_START_S
            log.info("Ray driver ended (%s); connecting again in %.0f s", self._state.detail, backoff)
            await clock.sleep(backoff)
            backoff = min(backoff * 2, self.RESTART_BACKOFF_MAX_S)

    async def _run_driver(self) -> bool:
        cfg = DriverConfig(
            address=self.address, namespace=self.gpu.ray_namespace, store_key=self.store_key, num_gpus=self.gpu.num_gpus,
            num_cpus=self.gpu.num_cpus, resources=dict(self.gpu.resources),
            worker_dir=str(self.gpu.ray_worker_dir) if self.gpu.ray_worker_dir else None,
            status_every_s=self.STATUS_EVERY_S, connect_timeout_s=self.CONNECT_TIMEOUT_S,
        )
        if self._state.state is not EngineState.unreachable:
            self._state = EngineStatus(engine=self.name, state=EngineState.connecting, address=self.address,
                                       detail=f"connecting to the Ray cluster at {self.address}")
        with self.log_path.open("ab") as logf:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clkt.inject.ray_driver", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=logf, start_new_session=True,
            )
        self._proc = proc
        self.drivers_started += 1
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((cfg.model_dump_json() + "\n").encode())
        await proc.stdin.drain()
        ready = False
        try:
            while True:
                try:
                    line = await asyncio.wait_for(proc.stdout.readline(), timeout=self.SILENT_S + self.CONNECT_TIMEOUT_S * (not ready))
                except TimeoutError:
                    self._unreachable(f"the Ray driver stopped answering (cluster at {self.address}); restarting it")
                    proc.kill()
                    break
                if not line:
                    break
                ready = self._on_event(line) or ready
        finally:
            rc = await proc.wait()
            self._proc = None
            if self._state.state is not EngineState.unreachable:
                self._unreachable(f"the Ray driver exited (code {rc}; see {self.log_path})")
            for run in list(self._runs.values()):
                run.finish(JobEnd(kind=EndKind.unavailable, detail=self._state.detail, where=run.where))
            self._runs.clear()
        return ready

    def _unreachable(self, detail: str) -> None:
        self._state = EngineStatus(engine=self.name, state=EngineState.unreachable, address=self.address, detail=detail)

    def _on_event(self, line: bytes) -> bool:
        """Apply one event; True when it says the cluster is connected."""
        try:
            ev = _EVENTS.validate_json(line)
        except ValidationError:
            log.warning("Ray driver: unreadable line %r", line[:200])
            return False
        if isinstance(ev, StatusEvent):
            if ev.state == "ready":
                if self._state.state is not EngineState.ready:
                    log.info("Ray cluster at %s: %s", self.address, describe_nodes(ev.nodes))
                self._nodes = list(ev.nodes)
                self._state = EngineStatus(engine=self.name, state=EngineState.ready, address=self.address,
                                           detail=describe_nodes(ev.nodes))
                return True
            self._unreachable(ev.detail)
        elif isinstance(ev, StartedEvent):
            run = self._runs.get(ev.job_id)
            if run is not None:
                run.where = f"ray:{ev.node}" if ev.node else "ray"
            log.info("job %d %s on Ray node %s", ev.job_id, "found again, still running," if ev.attached else "started",
                     ev.node or "?")
        elif isinstance(ev, EndedEvent):
            run = self._runs.pop(ev.job_id, None)
            if run is not None:
                where = f"ray:{ev.node}" if ev.node else run.where
                run.finish(JobEnd(kind=EndKind(ev.kind), returncode=ev.returncode, detail=ev.detail, where=where))
        return False
