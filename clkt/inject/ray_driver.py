"""The Ray driver: `python -m clkt.inject.ray_driver`, the daemon's one connection to a Ray cluster.

A child process of the daemon (`clkt.inject.ray_engine.RayEngine`), so that Ray's client, which ends its
process when the cluster's head stays unreachable, never takes the daemon with it; it dies with the daemon.
It reads a `DriverConfig` line and `Command`s on stdin, writes `Event`s on stdout (`clkt.inject.ray_protocol`),
and for each submitted job:

1. finds the job's actor again by name when one is on the cluster with the same spec (a daemon restarted), or
   creates it (`clkt.inject.ray_runner.JobRunner`, detached, with the job's resources): the snapshot's
   folder goes into Ray's object store once per snapshot and reaches each node once; the base answers of the
   job's (snapshot, target) go with it when the daemon has them;
2. the base pass of a (snapshot, target) runs once: the first job of the pair computes it; the pair's other
   jobs wait here, holding no cluster resources, until its answers are back in the daemon's base cache and
   then start with them (a producer that fails hands the turn to the next job of the pair);
3. polls the actor, writes its progress into the daemon's `jobs/<id>/progress.json`, and when the job process
   has ended brings its outputs back into `jobs/<id>/` (`clkt.inject.bundles`), records the run's end there
   (`ended.json`: a daemon that restarts before committing takes that outcome instead of running the job again,
   `clkt.inject.consumer`), removes the actor and says `ended`; an actor lost with its node says `lost`.

Exit status `EXIT_UNREACHABLE` (after a `StatusEvent` saying why) when the cluster cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from clkt.inject.bundles import base_files, pack_dir, unpack, unpack_artifacts
from clkt.inject.contract import JobProgress, JobSpec, RunEnded, run_fingerprint, write_json_atomic
from clkt.inject.ray_protocol import (
    Command,
    DriverConfig,
    EndedEvent,
    Event,
    NodeInfo,
    RunnerStatus,
    StartedEvent,
    StatusEvent,
    StopCommand,
    SubmitCommand,
)
from clkt.layout import BASE_DIR, ENDED_FILE, PROGRESS_FILE

__all__ = ["EXIT_UNREACHABLE", "Driver", "fingerprint", "main"]

log = logging.getLogger("clkt.inject.ray_driver")

EXIT_UNREACHABLE = 75  # EX_TEMPFAIL: the cluster could not be reached; the engine tries again later
_COMMANDS: TypeAdapter[Command] = TypeAdapter(Command)


def fingerprint(spec: JobSpec) -> str:
    """What identifies a run of `spec` on the cluster: the spec without the daemon's paths."""
    return run_fingerprint(spec)


def _emit(event: Event) -> None:
    sys.stdout.write(event.model_dump_json() + "\n")
    sys.stdout.flush()


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A TCP connection to the head's GCS port (ray.init alone retries for minutes); OSError when refused."""
    if address == "auto" or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    with socket.create_connection((host or address, int(port) if port.isdigit() else 6379), timeout=timeout_s):
        pass


class Driver:
    POLL_S: ClassVar[float] = 1.0
    ATTACH_TIMEOUT_S: ClassVar[float] = 30.0
    NAME_RETRY_S: ClassVar[float] = 0.5

    def __init__(self, cfg: DriverConfig) -> None:
        import ray

        from clkt.inject.ray_runner import JobRunner

        self.cfg = cfg
        self.ray: Any = ray  # Ray's own annotations do not cover what is used here
        self.runner = self.ray.remote(max_concurrency=4)(JobRunner)
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.snapshots: dict[tuple[str, float], Any] = {}  # (export folder, manifest mtime) -> ObjectRef of its tar
        self.producers: dict[tuple[str, str], tuple[int, asyncio.Future[None]]] = {}  # (snapshot, target) -> its base job
        self.stopping: set[int] = set()  # jobs the daemon asked to stop: only these runs are removed from the cluster

    # -- the cluster ----------------------------------------------------------------------------------------------

    def nodes(self) -> list[NodeInfo]:
        return [
            NodeInfo(node_id=str(n["NodeID"]), host=str(n.get("NodeManagerAddress", "")), alive=bool(n.get("Alive")),
                     resources={k: float(v) for k, v in (n.get("Resources") or {}).items()
                                if not k.startswith("node:") and k not in ("memory", "object_store_memory")})
            for n in self.ray.nodes()
        ]

    async def status_loop(self) -> None:
        """The cluster's nodes every `status_every_s` (the engine's heartbeat); a cluster gone ends the driver."""
        while True:
            try:
                nodes = await asyncio.to_thread(self.nodes)
            except Exception as e:  # noqa: BLE001 - the head went away
                _emit(StatusEvent(state="unreachable", detail=f"lost the Ray cluster at {self.cfg.address}: {_first_line(e)}"))
                os._exit(EXIT_UNREACHABLE)
            _emit(StatusEvent(state="ready", nodes=nodes))
            await asyncio.sleep(self.cfg.status_every_s)

    async def command_loop(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            try:
                cmd = _COMMANDS.validate_json(line)
            except ValidationError as e:
                log.error("ignored a command that does not parse: %s", e.errors()[0]["msg"])
                continue
            if isinstance(cmd, SubmitCommand) and cmd.job_id not in self.tasks:
                task = asyncio.create_task(self.run(cmd), name=f"job-{cmd.job_id}")
                self.tasks[cmd.job_id] = task
                task.add_done_callback(self._forget)
            elif isinstance(cmd, StopCommand):
                running = self.tasks.get(cmd.job_id)
                if running is None:
                    _emit(EndedEvent(job_id=cmd.job_id, kind="exited", returncode=None, detail="not running"))
                else:
                    self.stopping.add(cmd.job_id)
                    running.cancel()
        # stdin closed: the daemon stops or died; the runs go on, and the next driver finds them (the job tasks
        # cancelled when the driver's loop ends leave their actors alone: see `run`)

    def _forget(self, task: asyncio.Task[None]) -> None:
        for job_id, t in list(self.tasks.items()):
            if t is task:
                del self.tasks[job_id]

    # -- one job ----------------------------------------------------------------------------------------------------

    def _name(self, job_id: int) -> str:
        return f"job-{self.cfg.store_key}-{job_id}"

    async def _find(self, name: str, fp: str) -> Any | None:
        """The job's actor when one with the same spec is on the cluster (another one is removed)."""
        try:
            actor = self.ray.get_actor(name, namespace=self.cfg.namespace)
        except ValueError:
            return None
        try:
            got = await asyncio.wait_for(_await(actor.fingerprint.remote()), timeout=self.ATTACH_TIMEOUT_S)
        except (TimeoutError, self.ray.exceptions.RayError):
            got = None
        if got == fp:
            return actor
        log.warning("%s: a run with another spec (or an unresponsive one) is on the cluster; replacing it", name)
        with contextlib.suppress(Exception):
            self.ray.kill(actor)
        return None

    def _snapshot_ref(self, folder: Path) -> Any:
        key = (str(folder), (folder / "manifest.json").stat().st_mtime)
        if key not in self.snapshots:
            self.snapshots[key] = self.ray.put(pack_dir(folder))
        return self.snapshots[key]

    async def _base_for(self, spec: JobSpec) -> tuple[bytes, asyncio.Future[None] | None]:
        """The base answers to ship with the job, and the future to resolve when this job is the pair's producer."""
        pair = (spec.snapshot_id, spec.target.name)
        while True:
            have = base_files(spec.base_cache_dir, spec.target.name)
            if have:
                return have, None
            producer = self.producers.get(pair)
            if producer is None or producer[1].done():
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self.producers[pair] = (spec.job_id, fut)
                return b"", fut
            _progress(spec, JobProgress(phase=f"waiting for the base answers of job {producer[0]}"))
            await asyncio.shield(producer[1])

    async def _create(self, spec: JobSpec, fp: str, base: bytes) -> Any:
        name = self._name(spec.job_id)
        options = dict(
            name=name, namespace=self.cfg.namespace, lifetime="detached", num_gpus=self.cfg.num_gpus,
            num_cpus=self.cfg.num_cpus, resources=dict(self.cfg.resources), max_restarts=0,
        )
        snapshot = self._snapshot_ref(spec.snapshot_dir)
        for _ in range(40):  # a removed actor's name is freed a moment after
            try:
                return self.runner.options(**options).remote(spec.model_dump_json(), fp, snapshot, base, self.cfg.worker_dir)
            except ValueError:
                await asyncio.sleep(self.NAME_RETRY_S)
        raise RuntimeError(f"the actor name {name} stays taken")

    async def run(self, cmd: SubmitCommand) -> None:
        spec = JobSpec.model_validate_json(Path(cmd.spec_path).read_text(encoding="utf-8"))  # noqa: ASYNC240 - once per job
        fp = fingerprint(spec)
        produce: asyncio.Future[None] | None = None
        actor = None
        try:
            actor = await self._find(self._name(spec.job_id), fp)
            attached = actor is not None
            if actor is None:
                base, produce = await self._base_for(spec)
                _progress(spec, JobProgress(phase="queued on the cluster"))
                actor = await self._create(spec, fp, base)
            await self._follow(spec, actor, attached, produce)
        except asyncio.CancelledError:
            if spec.job_id not in self.stopping:  # the driver ends (stdin closed): the run goes on without a watcher
                raise
            if actor is not None:  # stopped by the daemon (timeout, lease lost)
                with contextlib.suppress(Exception):
                    self.ray.kill(actor)
            _emit(EndedEvent(job_id=spec.job_id, kind="exited", returncode=None, detail="stopped"))
        except self.ray.exceptions.RayActorError as e:
            _emit(EndedEvent(job_id=spec.job_id, kind="lost", detail=_first_line(e)))
        except Exception as e:
            log.exception("job %d", spec.job_id)
            _emit(EndedEvent(job_id=spec.job_id, kind="lost", detail=f"{type(e).__name__}: {_first_line(e)}"))
        finally:
            self.stopping.discard(spec.job_id)
            if produce is not None and not produce.done():
                produce.set_result(None)  # the pair's next job computes the base answers if this one could not

    async def _follow(self, spec: JobSpec, actor: Any, attached: bool, produce: asyncio.Future[None] | None) -> None:
        started = False
        pending = None
        while True:
            if pending is None:
                pending = asyncio.ensure_future(_await(actor.poll.remote()))
            done, _ = await asyncio.wait({pending}, timeout=self.POLL_S * 5)
            if not done:
                continue  # the actor waits for its resources, or is busy: keep waiting on the same poll
            try:
                st = RunnerStatus.model_validate_json(pending.result())
            except self.ray.exceptions.ActorUnavailableError:  # a moment's network trouble: ask again
                pending = None
                await asyncio.sleep(self.POLL_S)
                continue
            pending = None
            if not started:
                started = True
                _emit(StartedEvent(job_id=spec.job_id, node=st.node, attached=attached))
            if st.progress:
                with contextlib.suppress(ValidationError, OSError):
                    _progress(spec, JobProgress.model_validate_json(st.progress))
            if produce is not None and not produce.done() and st.base_ready:
                unpack(await _await(actor.base_files.remote()), spec.base_cache_dir or spec.artifacts_dir / BASE_DIR)
                produce.set_result(None)
            if st.returncode is not None:
                data = await _await(actor.collect.remote())
                unpack_artifacts(data, spec.artifacts_dir, spec.base_cache_dir, header=f"--- brought back from {st.node} ---\n")
                # the run's end, beside its files: a daemon that dies before committing them takes them at its restart
                write_json_atomic(spec.artifacts_dir / ENDED_FILE,
                                  RunEnded(fingerprint=fingerprint(spec), returncode=st.returncode, where=f"ray:{st.node}"))
                with contextlib.suppress(Exception):
                    await _await(actor.close.remote())
                with contextlib.suppress(Exception):
                    self.ray.kill(actor)
                _emit(EndedEvent(job_id=spec.job_id, kind="exited", returncode=st.returncode, node=st.node))
                return
            await asyncio.sleep(self.POLL_S)


async def _await(ref: Any) -> Any:
    return await asyncio.wrap_future(ref.future())


def _progress(spec: JobSpec, p: JobProgress) -> None:
    with contextlib.suppress(OSError):
        spec.artifacts_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(spec.artifacts_dir / PROGRESS_FILE, p)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    died = next((ln for ln in lines if "died because" in ln or "node" in ln.lower()), None)
    return (died or (lines[0] if lines else type(e).__name__))[:500]


async def _stdin() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def _main() -> int:
    import ray

    reader = await _stdin()
    try:
        cfg = DriverConfig.model_validate_json(await reader.readline())
    except ValidationError as e:
        print(f"ray driver: bad configuration line: {e.errors()[0]['msg']}", file=sys.stderr)
        return 2
    try:
        await asyncio.to_thread(_check_reachable, cfg.address)
        await asyncio.wait_for(asyncio.to_thread(
            ray.init, address=cfg.address, namespace=cfg.namespace, log_to_driver=False, logging_level=logging.WARNING,
        ), timeout=cfg.connect_timeout_s)
    except (OSError, TimeoutError, ConnectionError, ValueError, RuntimeError) as e:
        why = "timed out connecting" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {_first_line(e)}"
        _emit(StatusEvent(state="unreachable", detail=f"cannot reach the Ray cluster at {cfg.address}: {why}"))
        return EXIT_UNREACHABLE
    driver = Driver(cfg)
    status = asyncio.create_task(driver.status_loop(), name="status")
    try:
        await driver.command_loop(reader)
    except Exception as e:  # noqa: BLE001 - the cluster went away under a call
        _emit(StatusEvent(state="unreachable", detail=f"lost the Ray cluster at {cfg.address}: {_first_line(e)}"))
        return EXIT_UNREACHABLE
    finally:
        status.cancel()
    return 0


def main() -> int:
    from clkt.inject.run_job import _die_with_parent

    _die_with_parent()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    rc = asyncio.run(_main())
    sys.stdout.flush()
    os._exit(rc)  # without waiting for Ray's threads


if __name__ == "__main__":
    sys.exit(main())
