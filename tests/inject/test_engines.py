"""The consumer behind its engine, without a model: a fake engine (the `JobEngine` ABC) ends runs as a cluster
would (out of memory, a lost node, the engine gone, a permanent failure), and says when it is not ready."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import aiohttp

from clkt.config import EMBEDDED_TARGET, Settings
from clkt.context import ServiceContext
from clkt.inject.contract import FailureKind, JobFailure, JobSpec, RetryWith, write_json_atomic
from clkt.inject.engine import EndKind, EngineState, EngineStatus, JobEnd, JobEngine, RunningJob
from clkt.inject.ray_engine import describe_nodes
from clkt.inject.ray_protocol import NodeInfo, fits, job_request
from clkt.layout import FAILURE_FILE
from clkt.status import collect_status
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import GpuJobRecord, enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus
from tests.conftest import wait_for
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store

Script = Callable[[JobSpec, int], JobEnd]  # (spec, attempt) -> how the run ends (after writing its files)


class FakeRun(RunningJob):
    def __init__(self, end: JobEnd) -> None:
        self.end = end
        self.where = end.where

    async def wait(self, timeout_s: float) -> JobEnd | None:
        return self.end

    async def stop(self) -> None:
        return None

    async def hand_back(self) -> str:
        return "shutdown: left running"


class FakeEngine(JobEngine):
    name = "ray"

    def __init__(self, script: Script, *, state: EngineState = EngineState.ready) -> None:
        self.script = script
        self.state = state
        self.specs: list[JobSpec] = []

    def slots(self) -> list[str]:
        return ["ray:0"]

    def status(self) -> EngineStatus:
        detail = "cannot reach the Ray cluster at 10.9.9.9:6379: ConnectionRefusedError" if self.state is EngineState.unreachable else ""
        return EngineStatus(engine="ray", state=self.state, detail=detail, address="10.9.9.9:6379")

    async def close(self) -> None:
        self.state = EngineState.stopped

    async def submit(self, spec: JobSpec, spec_path: Path, *, slot: str) -> RunningJob:
        self.specs.append(spec)
        return FakeRun(self.script(spec, len(self.specs)))


def _fail_file(spec: JobSpec, failure: JobFailure) -> JobEnd:
    write_json_atomic(spec.artifacts_dir / FAILURE_FILE, failure)
    return JobEnd(kind=EndKind.exited, returncode=3 if failure.permanent else 1, where="ray:node-a")


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", spec={"targets": [EMBEDDED_TARGET], "languages": ["en", "fr"]},  # type: ignore[arg-type]
        gpu={"engine": "ray", "ray_address": "10.9.9.9:6379", "eval_batch_size": 8, "epochs": 1},  # type: ignore[arg-type]
        daemon={"poll_interval_s": 0.05, "lease_s": 60},  # type: ignore[arg-type]
    )


async def _run(tmp_path: Path, tiny_snapshot: Path, engine: FakeEngine, *, max_attempts: int = 3) -> GpuJobRecord:
    """One burst of the consumer (retries without backoff, so every attempt runs in it); the job afterwards."""
    settings = _settings(tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            # the job's stored config says "local": where it runs is the consumer's own setting
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                                   train_langs=["en"], config=settings.gpu.model_copy(update={"engine": "local", "ray_address": None}),
                                   max_attempts=max_attempts)
        async with aiohttp.ClientSession() as http:
            consumer = make_consumer(settings, burst=True, engine=engine)
            consumer.RETRY_BACKOFF_S = consumer.LOST_RETRY_S = 0.0
            await consumer.run(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()))
        async with store.session() as s:
            (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
        return job


async def test_out_of_memory_retries_the_job_at_half_the_batch_then_fails_with_its_reason(tmp_path: Path, tiny_snapshot: Path) -> None:
    def script(spec: JobSpec, attempt: int) -> JobEnd:
        size = spec.gpu.eval_batch_size or 0
        retry = RetryWith(eval_batch_size=size // 2) if size > 2 else None
        return _fail_file(spec, JobFailure(kind=FailureKind.out_of_memory, message=f"out of memory at batch {size}",
                                           permanent=retry is None, retry_with=retry))

    engine = FakeEngine(script)
    job = await _run(tmp_path, tiny_snapshot, engine)
    assert [s.gpu.eval_batch_size for s in engine.specs] == [8, 4, 2]  # each retry at half the batch
    assert all(s.gpu.engine == "ray" and s.device == "auto" for s in engine.specs)
    assert job.status == LeaseStatus.failed and job.attempts == 3 and job.config is not None and job.config.eval_batch_size == 2
    assert "out of memory at batch 2" in (job.last_error or "")


async def test_a_lost_node_runs_the_job_again_and_a_permanent_failure_fails_once(tmp_path: Path, tiny_snapshot: Path) -> None:
    def script(spec: JobSpec, attempt: int) -> JobEnd:
        if attempt == 1:
            return JobEnd(kind=EndKind.lost, detail="The actor died because its node has died.", where="ray:node-b")
        return _fail_file(spec, JobFailure(kind=FailureKind.bad_input, message="LoRA target modules ['nope'] do not fit", permanent=True))

    engine = FakeEngine(script)
    job = await _run(tmp_path, tiny_snapshot, engine, max_attempts=5)
    assert len(engine.specs) == 2  # run again after the lost node, then failed once, not 5 times
    assert job.status == LeaseStatus.failed and job.attempts == 2
    assert "bad-input" in (job.last_error or "") and "do not fit" in (job.last_error or "")


async def test_an_engine_that_went_away_hands_the_job_back_without_spending_an_attempt(tmp_path: Path, tiny_snapshot: Path) -> None:
    def script(spec: JobSpec, attempt: int) -> JobEnd:
        return JobEnd(kind=EndKind.unavailable, detail="the Ray driver exited (code 75)")

    engine = FakeEngine(script)
    job = await _run(tmp_path, tiny_snapshot, engine)
    assert len(engine.specs) == 1  # deferred: the burst does not claim it again at once
    assert job.status == LeaseStatus.pending and job.attempts == 0
    assert "handed back" in (job.last_error or "") and "code 75" in (job.last_error or "")


async def test_no_claim_while_the_cluster_is_unreachable_and_the_status_says_why(tmp_path: Path, tiny_snapshot: Path) -> None:
    settings = _settings(tmp_path)
    engine = FakeEngine(lambda spec, attempt: _fail_file(spec, JobFailure(kind=FailureKind.crashed, message="x", permanent=True)),
                        state=EngineState.unreachable)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                                   train_langs=["en"], config=settings.gpu, max_attempts=3)
        consumer = make_consumer(settings, engine=engine)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
            task = asyncio.create_task(consumer.run(ctx))

            async def engine_state() -> str | None:
                rep = await collect_status(store)
                return rep.gpu_engine.state if rep.gpu_engine else None

            await wait_for(lambda: engine_state(), timeout=10)
            rep = await collect_status(store)
            assert rep.gpu_engine is not None and rep.gpu_engine.waiting
            assert "GPU jobs wait: cannot reach the Ray cluster at 10.9.9.9:6379" in rep.gpu_engine.line()
            assert engine.specs == [] and rep.gpu_jobs == {"pending": 1}  # nothing claimed while it is unreachable
            engine.state = EngineState.ready  # the cluster is back: the job starts
            await wait_for(lambda: engine.specs, timeout=10)

            async def ready() -> bool:
                return await engine_state() == "ready"

            await wait_for(ready, timeout=10)
            ctx.stopping.set()
            await asyncio.wait_for(task, timeout=20)
        rep = await collect_status(store)
    assert rep.gpu_engine is not None and rep.gpu_engine.state == "stopped"


def test_a_job_asking_for_more_than_any_node_offers_is_unschedulable() -> None:
    nodes = [NodeInfo(node_id="a", host="10.0.0.1", alive=True, resources={"CPU": 1, "GPU": 2}),
             NodeInfo(node_id="b", host="10.0.0.2", alive=False, resources={"CPU": 8, "GPU": 8, "a100": 1})]
    assert fits(job_request(num_gpus=2, num_cpus=1, resources={}), nodes)
    assert fits(job_request(num_gpus=0.25, num_cpus=0, resources={}), nodes)
    assert not fits(job_request(num_gpus=4, num_cpus=1, resources={}), nodes)
    assert not fits(job_request(num_gpus=1, num_cpus=1, resources={"a100": 1}), nodes)  # only on a dead node
    assert describe_nodes(nodes) == "1 node(s) alive: 10.0.0.1 (CPU 1, GPU 2)"



async def test_two_cpu_slots_run_two_jobs_at_once_each_told_the_cpu(tmp_path: Path, tiny_snapshot: Path) -> None:
    """`gpu.cpu_jobs = 2` (or 2 cores at `torch_threads = 1`): the local engine's `cpu` and `cpu#2` claim a job
    each; both jobs start before either ends, and each job's spec names the device, never the slot."""
    from clkt.inject.local_engine import LocalEngine

    started: list[tuple[str, str]] = []
    both = asyncio.Event()

    class GatedRun(FakeRun):
        async def wait(self, timeout_s: float) -> JobEnd | None:
            try:
                await asyncio.wait_for(both.wait(), timeout=timeout_s)
            except TimeoutError:
                return None
            return self.end

    class TwoCpuEngine(LocalEngine):
        async def submit(self, spec: JobSpec, spec_path: Path, *, slot: str) -> RunningJob:
            started.append((slot, spec.device))
            if len(started) == 2:
                both.set()
            return GatedRun(_fail_file(spec, JobFailure(kind=FailureKind.bad_input, message="x", permanent=True)))

    settings = Settings(data_dir=tmp_path / "data", spec={"targets": [EMBEDDED_TARGET], "languages": ["en", "fr"]},  # type: ignore[arg-type]
                        gpu={"devices": ["cpu"], "cpu_jobs": 2, "epochs": 1},  # type: ignore[arg-type]
                        daemon={"poll_interval_s": 0.05, "lease_s": 60})  # type: ignore[arg-type]
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await seed_store(store, tiny_snapshot)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                                   train_langs=["en", "fr"], config=settings.gpu, max_attempts=1)
        engine = TwoCpuEngine(devices=settings.gpu.devices, cpu_jobs=settings.gpu.cpu_jobs or 1)
        async with aiohttp.ClientSession() as http:
            consumer = make_consumer(settings, burst=True, engine=engine)
            await asyncio.wait_for(consumer.run(ServiceContext(store=store, http=http, owner="o", metrics=Metrics())), 30)
        async with store.session() as s:
            jobs = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert sorted(started) == [("cpu", "cpu"), ("cpu#2", "cpu")]  # one job a slot, at once (else the gate never opens)
    assert sorted(j.status for j in jobs) == [LeaseStatus.failed, LeaseStatus.failed]
