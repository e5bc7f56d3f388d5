"""The Ray engine on a real local Ray cluster, CPU only: a head and nodes with logical GPUs started here.

The embedded target is trained and evaluated inside Ray workers (its inputs shipped, its outputs brought
back, the base pass once), a worker node is removed mid-job (the job runs again on another node and is
committed once), the daemon is killed (-9) mid-job (the next one finds the run again), the cluster is
unreachable then back, and a job asking for resources no node offers waits with the reason said.

Ray binds loopback only with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (set before the cluster starts).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import func, select
from sqlmodel import col

from clkt.config import EMBEDDED_TARGET, Settings
from clkt.context import ServiceContext
from clkt.inject.consumer import GpuConsumer
from clkt.inject.contract import JobProgress
from clkt.layout import PROGRESS_FILE, job_dir
from clkt.status import collect_status
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import GpuJobRecord, enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus, QuestionResult
from tests.conftest import REPO, wait_for
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store, write_tiny_snapshot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

JOB = {"epochs": 1, "max_new_tokens": 2, "max_seq_len": 128, "torch_threads": 1, "scorers": ["letter-logprob"]}
RESULTS_PER_JOB = 8  # 2 test questions x 2 languages x 1 scorer x (base, injected)


class LocalCluster:
    def __init__(self) -> None:
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
        self.gpu_node = self.cluster.add_node(num_cpus=1, num_gpus=2)
        self.cluster.wait_for_nodes()

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    async def replace_gpu_node(self) -> None:
        """The node with the logical GPUs is removed (its runs die with it), then another one joins. The removal
        and the wait run in a thread (the consumer goes on meanwhile); the new node is started on the main thread,
        where Ray (2.60) installs its SIGTERM handler (`signal` works there only), a moment's block of the loop."""
        await asyncio.to_thread(self.cluster.remove_node, self.gpu_node)
        self.gpu_node = self.cluster.add_node(num_cpus=1, num_gpus=2)
        await asyncio.to_thread(self.cluster.wait_for_nodes)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback only
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])  # the workers' clkt
    c = LocalCluster()
    try:
        yield c
    finally:
        c.cluster.shutdown()


@pytest.fixture()
def worker_dir(tmp_path: Path, models_data_dir: Path) -> Path:
    """The nodes' scratch folder, sharing the converted embedded models (the nodes are this machine)."""
    d = tmp_path / "worker"
    d.mkdir()
    (models_data_dir / "models").mkdir(exist_ok=True)
    (d / "models").symlink_to(models_data_dir / "models", target_is_directory=True)
    return d


def _settings(tmp_path: Path, address: str, worker_dir: Path, **gpu: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", spec={"targets": [EMBEDDED_TARGET], "languages": ["en", "fr"]},  # type: ignore[arg-type]
        gpu={"engine": "ray", "ray_address": address, "num_gpus": 1, "num_cpus": 0, "ray_max_jobs": 2,  # type: ignore[arg-type]
             "ray_worker_dir": str(worker_dir), **JOB, **gpu},
        daemon={"poll_interval_s": 0.2, "lease_s": 60},  # type: ignore[arg-type]
        retention={"job_logs_days": 1},  # type: ignore[arg-type]  # the tests read a committed job's log
    )


async def _seed(tmp_path: Path, settings: Settings, strategies: dict[str, dict[str, Any]]) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path}/s.db"
    snapshot = write_tiny_snapshot(tmp_path / "snapshot")
    async with Store(url=url) as store:
        await seed_store(store, snapshot)
        async with store.transaction() as s:
            for strategy, extra in strategies.items():
                await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=[strategy],
                                       train_langs=["en"], config=settings.gpu.model_copy(update=extra), max_attempts=3)
    return url


async def _jobs(store: Store) -> list[GpuJobRecord]:
    async with store.session() as s:
        return await jobs_for_snapshot(s, SNAPSHOT_ID)


async def _results(store: Store, job_id: int) -> int:
    async with store.session() as s:
        q = select(func.count()).select_from(QuestionResult).where(col(QuestionResult.job_id) == job_id)
        return int((await s.execute(q)).scalar_one())


@asynccontextmanager
async def _consumer(store: Store, consumer: GpuConsumer) -> AsyncIterator[tuple[ServiceContext, asyncio.Task[None]]]:
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="test-daemon", metrics=Metrics())
        task = asyncio.create_task(consumer.run(ctx))
        try:
            yield ctx, task
        finally:
            ctx.stopping.set()
            await asyncio.wait_for(task, timeout=60)


def _phase(data_dir: Path, job_id: int) -> JobProgress | None:
    try:
        return JobProgress.model_validate_json((job_dir(data_dir, job_id) / PROGRESS_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def _training(data_dir: Path, job_id: int) -> bool:
    """Whether the job is between its first training step and its last validation, as the driver relays it (every
    second: a fast machine trains an epoch of the tiny snapshot between two relays, so a validation counts too)."""
    p = _phase(data_dir, job_id)
    return p is not None and (p.phase == "train" or p.phase.startswith("val@"))


async def test_jobs_train_and_evaluate_inside_ray_workers_with_one_base_pass(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path,
) -> None:
    settings = _settings(tmp_path, cluster.address, worker_dir)
    # a second job of the same (snapshot, target), and a third whose adapter config cannot fit the model
    url = await _seed(tmp_path, settings, {"cpt-lora": {}, "sft-lora": {"target_modules": ["no_such_proj"]}})
    async with Store(url=url) as store:
        async with aiohttp.ClientSession() as http:
            consumer = make_consumer(settings, burst=True)
            await consumer.run(ServiceContext(store=store, http=http, owner="test-daemon", metrics=Metrics()))
        good, bad = await _jobs(store)
        assert good.status == LeaseStatus.done, good.last_error
        assert await _results(store, good.id) == RESULTS_PER_JOB
        assert (good.summary.get("ran_on") or "").startswith("ray:")
        # the permanent failure failed once, with its reason, from inside the Ray worker
        assert bad.status == LeaseStatus.failed and bad.attempts == 1
        assert "bad-input" in (bad.last_error or "") and "no_such_proj" in (bad.last_error or "")
        rep = await collect_status(store)
    assert rep.gpu_engine is not None and rep.gpu_engine.engine == "ray"
    data = settings.data_dir
    art = job_dir(data, good.id)
    # what travelled back: outcome, predictions, validation records, the best adapter, the log; no optimizer state
    for rel in ("outcome.json", "predictions.jsonl", "job.log", "checkpoints/epoch-1/val.json",
                "checkpoints/epoch-1/adapter_model.safetensors", "checkpoints/epoch-1/adapter_config.json"):
        assert (art / rel).is_file(), rel
    assert not list(art.rglob("optim.pt"))
    assert "brought back from" in (art / "job.log").read_text()
    # the base pass of the (snapshot, target) ran once: the other job was given its answers
    logs = [(job_dir(data, j.id) / "job.log").read_text() for j in (good, bad)]
    assert sum("answering 4 questions with the base model" in t for t in logs) == 1
    assert sum("read from the shared cache" in t for t in logs) == 1
    assert list((data / "jobs" / "base" / SNAPSHOT_ID).glob("gemma-3-270m-*.jsonl"))
    assert not list(worker_dir.glob("jobs/*"))  # the nodes' scratch folders were removed


async def test_a_node_lost_mid_job_runs_the_job_again_elsewhere_committed_once(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _settings(tmp_path, cluster.address, worker_dir, epochs=8)  # time to be caught mid-training
    url = await _seed(tmp_path, settings, {"cpt-lora": {}})
    monkeypatch.setattr(GpuConsumer, "LOST_RETRY_S", 0.0)
    async with Store(url=url) as store:
        consumer = make_consumer(settings)
        async with _consumer(store, consumer):
            await wait_for(lambda: _training(settings.data_dir, 1), timeout=240)
            await cluster.replace_gpu_node()  # mid-training

            async def done() -> bool:
                return (await _jobs(store))[0].status == LeaseStatus.done

            await wait_for(done, timeout=300)
        (job,) = await _jobs(store)
        assert job.attempts == 2 and job.last_error is None
        assert await _results(store, job.id) == RESULTS_PER_JOB  # committed once
    lost = [r for r in consumer.finished if r.status is LeaseStatus.pending]
    assert len(lost) == 1 and "runs again" in lost[0].detail and "node" in lost[0].detail
    assert [r.status for r in consumer.finished].count(LeaseStatus.done) == 1


def _daemon_config(tmp_path: Path, address: str, worker_dir: Path, *, port: int = 0, epochs: int = 4) -> Path:
    sources = "\n".join(f"[sources.{s}]\nenabled = false" for s in ("tmdb", "musicbrainz", "deezer", "thesportsdb", "usgs", "gdacs"))
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f"""
data_dir = "{tmp_path / 'data'}"
store_url = "sqlite+aiosqlite:///{tmp_path}/s.db"
[http]
port = {port}
[daemon]
poll_interval_s = 0.2
grace_period_s = 2
lease_s = 60
[retention]
job_logs_days = 1
[spec]
languages = ["en", "fr"]
[gpu]
engine = "ray"
ray_address = "{address}"
num_gpus = 1
num_cpus = 0
ray_max_jobs = 1
ray_worker_dir = "{worker_dir}"
epochs = {epochs}
max_new_tokens = 2
max_seq_len = 128
torch_threads = 1
scorers = ["letter-logprob"]
{sources}
""")
    return cfg


def _start_daemon(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(REPO / "run_daemon.py"), "--config", str(cfg)], stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
async def test_the_daemon_killed_mid_job_finds_its_run_again(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path, stop: signal.Signals,
) -> None:
    # 16 epochs (about 40 s of the tiny model's training): 4 ended within the 12 s the second daemon takes to start on
    # an idle machine, and the second daemon ran the job again instead of finding its run. Killed or stopped, the
    # daemon's driver reads the end of its stdin: it once cancelled its job tasks on the way out, which removed the
    # runs from the cluster (always on a stop, and on a kill when the end of stdin came before the kernel's SIGKILL)
    cfg = _daemon_config(tmp_path, cluster.address, worker_dir, epochs=16)
    settings = _settings(tmp_path, cluster.address, worker_dir, epochs=16)
    url = await _seed(tmp_path, settings, {"cpt-lora": {}})
    log = tmp_path / "daemon.log"
    first = _start_daemon(cfg, log)
    try:
        await wait_for(lambda: _training(settings.data_dir, 1), timeout=240)
        first.send_signal(stop)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    second = _start_daemon(cfg, log)
    try:
        async with Store(url=url) as store:
            async def done() -> bool:
                return (await _jobs(store))[0].status == LeaseStatus.done

            await wait_for(done, timeout=300)
            (job,) = await _jobs(store)
            assert await _results(store, job.id) == RESULTS_PER_JOB  # committed once
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=60)
    text = log.read_text()
    if stop == signal.SIGKILL:
        assert "recovered 1 GPU job leases" in text
    else:
        assert "recovered" not in text  # handed back on the way out
    assert "found again, still running" in text  # the run went on while no daemon watched it
    outcome = json.loads((job_dir(settings.data_dir, 1) / "outcome.json").read_text())
    assert outcome["summary"]["resumed_after_epoch"] == 0  # the same run, not a second one
    assert (job_dir(settings.data_dir, 1) / "job.log").read_text().count("on Ray node") == 1
    assert text.count(": done, best epoch") == 1


class _Gate:
    """A loopback TCP forwarder to the cluster's head: closed (nothing listens) until `open()`."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server: asyncio.AbstractServer | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def open(self) -> None:
        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            tr, tw = await asyncio.open_connection(*self.target)
            await asyncio.gather(pipe(r, tw), pipe(tr, w))

        self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()


async def test_an_unreachable_cluster_is_said_and_jobs_start_when_it_is_back(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clkt.inject.ray_engine import RayEngine

    monkeypatch.setattr(RayEngine, "RESTART_BACKOFF_MAX_S", 1.0)
    gate = _Gate(cluster.address)
    settings = _settings(tmp_path, gate.address, worker_dir)
    url = await _seed(tmp_path, settings, {"cpt-lora": {}})
    async with Store(url=url) as store:
        async with _consumer(store, make_consumer(settings)) as (_ctx, task):
            async def state() -> str | None:
                rep = await collect_status(store)
                return rep.gpu_engine.state if rep.gpu_engine else None

            async def unreachable() -> bool:
                return await state() == "unreachable"

            await wait_for(unreachable, timeout=60)
            rep = await collect_status(store)
            assert rep.gpu_engine is not None and f"cannot reach the Ray cluster at {gate.address}" in rep.gpu_engine.detail
            assert "GPU jobs wait" in rep.gpu_engine.line() and rep.gpu_jobs == {"pending": 1}
            assert not task.done()  # the daemon keeps running
            await gate.open()

            async def done() -> bool:
                return (await _jobs(store))[0].status == LeaseStatus.done

            try:
                await wait_for(done, timeout=240)
            finally:
                await gate.close()
        (job,) = await _jobs(store)
        assert job.attempts == 1


async def test_a_job_asking_for_resources_no_node_offers_waits_and_says_so(
    cluster: LocalCluster, tmp_path: Path, worker_dir: Path,
) -> None:
    settings = _settings(tmp_path, cluster.address, worker_dir, resources={"a100": 1})
    url = await _seed(tmp_path, settings, {"cpt-lora": {}})
    async with Store(url=url) as store:
        async with _consumer(store, make_consumer(settings)):
            async def unschedulable() -> bool:
                rep = await collect_status(store)
                return rep.gpu_engine is not None and rep.gpu_engine.state == "unschedulable"

            await wait_for(unschedulable, timeout=60)
            rep = await collect_status(store)
        assert rep.gpu_engine is not None
        assert "asks for CPU" not in rep.gpu_engine.detail and "GPU 1, a100 1" in rep.gpu_engine.detail
        assert "no node of the cluster offers it" in rep.gpu_engine.detail
        (job,) = await _jobs(store)
        assert job.status == LeaseStatus.pending and job.attempts == 0
