"""Bench: 8 GPU jobs on the Ray engine against the same 8 on the local engine, and Ray losing a node mid-way.

A local two-node Ray cluster with logical GPUs (a head and one more node, 2 logical GPUs each, loopback only:
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0) runs 8 jobs of the embedded target at reduced size (the tests' tiny
snapshot: 2 documents, 4 test and 2 validation questions per language; `--epochs` epochs; letter-logprob),
8 distinct targets so that no job waits for another's base pass; the local engine runs the same 8 with as
many slots as the cluster has GPUs (`cpu` devices), in one run, side by side:

- `ray_overhead`: Ray's wall time over the local engine's, minus 1 (goal: <= 0.15), `--rounds` runs of each
  alternating, their total walls compared (every wall is printed, and the best of each as `ray_overhead_best_of`). The cluster is started, and the consumer's
  engine connected to it (`ray_connect_s`: the driver process joining the cluster), before the jobs are queued
  and the clock runs: a user's cluster runs already, and a daemon connects once at its start;
- a third run on Ray in which the non-head node (and its runs) is removed once `--remove-after` jobs are done:
  8 of 8 committed (goal), none twice (goal: 0 jobs with more than one completion, results = 8 x one job's).

Ends with one JSON line; about 8-10 minutes on 2 CPU cores.

    .venv/bin/python bench/ray_jobs.py [--epochs 2] [--remove-after 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray starts: loopback only
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

import aiohttp  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from clkt.config import EMBEDDED_TARGET, Settings  # noqa: E402
from clkt.context import ServiceContext  # noqa: E402
from clkt.inject.engine import EngineState  # noqa: E402
from clkt.telemetry import Metrics  # noqa: E402
from storage.engine import Store  # noqa: E402
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot  # noqa: E402
from storage.models import LeaseStatus, QuestionResult  # noqa: E402
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store, write_tiny_snapshot  # noqa: E402

JOBS = 8
RESULTS_PER_JOB = 8  # 2 test questions x 2 languages x letter-logprob x (base, injected)


def _settings(root: Path, a: argparse.Namespace, gpu: dict[str, Any]) -> Settings:
    targets = [EMBEDDED_TARGET.model_copy(update={"name": f"gemma-{i}"}) for i in range(JOBS)]
    return Settings(
        data_dir=root / "data", spec={"targets": targets, "languages": ["en", "fr"]},  # type: ignore[arg-type]
        gpu={"epochs": a.epochs, "max_new_tokens": 2, "max_seq_len": 128, "torch_threads": 1,  # type: ignore[arg-type]
             "scorers": ["letter-logprob"], **gpu},
        daemon={"poll_interval_s": 0.2, "lease_s": 120},  # type: ignore[arg-type]
    )


def _dirs(root: Path, models: Path) -> None:
    for d in (root / "data", root / "worker"):
        d.mkdir(parents=True, exist_ok=True)
        if not (d / "models").exists():
            (d / "models").symlink_to(models, target_is_directory=True)


async def _run(root: Path, settings: Settings, *, on_done: Any = None) -> dict[str, Any]:
    snapshot = write_tiny_snapshot(root / "snapshot")
    async with Store(url=f"sqlite+aiosqlite:///{root}/s.db") as store:
        await seed_store(store, snapshot)
        consumer = make_consumer(settings)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="bench", metrics=Metrics())
            # the consumer starts and its engine connects (Ray: the driver process joins the cluster) before any
            # job exists and before the clock runs: a daemon connects once at its start, then runs jobs for months
            c0 = time.perf_counter()
            task = asyncio.create_task(consumer.run(ctx))
            while consumer.engine is None or consumer.engine.status().state is not EngineState.ready:
                if task.done():
                    task.result()
                    raise SystemExit("the consumer ended before its engine was ready")
                if time.perf_counter() - c0 > 180:
                    raise SystemExit(f"the engine did not become ready in 180 s: {consumer.engine and consumer.engine.status()}")
                await asyncio.sleep(0.1)
            connect = time.perf_counter() - c0
            async with store.transaction() as s:
                await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=[t.name for t in settings.spec.targets],
                                       strategies=["cpt-lora"], train_langs=["en"], config=settings.gpu, max_attempts=3)
            t0 = time.perf_counter()
            fired = False
            while True:
                async with store.session() as s:
                    jobs = await jobs_for_snapshot(s, SNAPSHOT_ID)
                done = sum(j.status == LeaseStatus.done for j in jobs)
                if on_done is not None and not fired and done >= on_done[0]:
                    fired = True
                    await asyncio.to_thread(on_done[1])
                if all(j.status in (LeaseStatus.done, LeaseStatus.failed) for j in jobs):
                    break
                await asyncio.sleep(0.5)
            wall = time.perf_counter() - t0
            ctx.stopping.set()
            await asyncio.wait_for(task, timeout=60)
        async with store.session() as s:
            results = int((await s.execute(select(func.count()).select_from(QuestionResult))).scalar_one())
        completions = [r.job_id for r in consumer.finished if r.status is LeaseStatus.done]
        return {
            "wall_s": round(wall, 1), "connect_s": round(connect, 1), "done": sum(j.status == LeaseStatus.done for j in jobs),
            "failed": sum(j.status == LeaseStatus.failed for j in jobs), "attempts": sum(j.attempts for j in jobs),
            "results": results, "twice": sum(completions.count(j) > 1 for j in set(completions)),
            "ran_on": sorted({str(j.summary.get("ran_on")) for j in jobs}),
            "errors": [j.last_error for j in jobs if j.status == LeaseStatus.failed][:3],
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--remove-after", type=int, default=2, help="jobs committed before the node is removed")
    p.add_argument("--rounds", type=int, default=2, help="local and Ray runs, alternating (their totals are compared)")
    p.add_argument("--models-dir", type=Path, default=Path(tempfile.gettempdir()) / "clkt-test-data" / "models")
    a = p.parse_args()
    from ray.cluster_utils import Cluster

    work = Path(tempfile.mkdtemp(prefix="clkt-bench-ray-"))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 2, "include_dashboard": False})
    node = cluster.add_node(num_cpus=1, num_gpus=2)
    cluster.wait_for_nodes()
    slots = 4  # the cluster's logical GPUs; the local engine gets as many devices
    try:
        runs: dict[str, dict[str, Any]] = {}
        walls: dict[str, list[float]] = {"local": [], "ray": []}
        twice, complete = 0, True  # over every run, not only the best ones
        ray_gpu = {"engine": "ray", "ray_address": cluster.address, "num_gpus": 1, "num_cpus": 0, "ray_max_jobs": slots}
        for rnd in range(a.rounds):  # alternating, so that a shift of the machine's load falls on both engines
            for name, gpu in (("local", {"devices": ["cpu"] * slots}), ("ray", ray_gpu)):
                root = work / f"{name}-{rnd}"
                _dirs(root, a.models_dir)
                gpu = {**gpu, "ray_worker_dir": str(root / "worker")} if name == "ray" else gpu
                got = asyncio.run(_run(root, _settings(root, a, gpu)))
                walls[name].append(got["wall_s"])
                twice += got["twice"]
                complete = complete and got["done"] == JOBS and got["results"] == JOBS * RESULTS_PER_JOB
                if name not in runs or got["wall_s"] < runs[name]["wall_s"]:
                    runs[name] = got
                print(f"{name} (round {rnd + 1}): {got}", file=sys.stderr, flush=True)
        root = work / "ray-node-lost"
        _dirs(root, a.models_dir)
        runs["lost"] = asyncio.run(_run(root, _settings(root, a, {**ray_gpu, "ray_worker_dir": str(root / "worker")}),
                                        on_done=(a.remove_after, lambda: cluster.remove_node(node))))
        print(f"node lost: {runs['lost']}", file=sys.stderr, flush=True)
    finally:
        cluster.shutdown()
    local, ray, lost = runs["local"], runs["ray"], runs["lost"]
    figures = {
        "jobs": JOBS, "parallel_slots": slots, "epochs": a.epochs, "load_avg_1m": round(os.getloadavg()[0], 2),
        "rounds": a.rounds, "local_walls_s": walls["local"], "ray_walls_s": walls["ray"],
        "local_wall_s": local["wall_s"], "ray_wall_s": ray["wall_s"], "ray_connect_s": ray["connect_s"],
        "ray_overhead": round(sum(walls["ray"]) / sum(walls["local"]) - 1, 3),
        "ray_overhead_best_of": round(ray["wall_s"] / local["wall_s"] - 1, 3),
        "local_done": local["done"], "ray_done": ray["done"],
        "node_lost_wall_s": lost["wall_s"], "node_lost_committed": lost["done"], "node_lost_attempts": lost["attempts"],
        "committed_twice": twice + lost["twice"],
        "results_as_expected": complete and lost["results"] == JOBS * RESULTS_PER_JOB,
        "node_lost_ran_on": lost["ran_on"],
    }
    goals = {"ray_overhead": "<= 0.15", "node_lost_committed": ">= 8", "committed_twice": "<= 0"}
    met = (figures["ray_overhead"] <= 0.15 and lost["done"] == JOBS and figures["committed_twice"] == 0  # type: ignore[operator]
           and bool(figures["results_as_expected"]) and local["done"] == ray["done"] == JOBS)
    print(json.dumps({"bench": "ray_jobs", "figures": figures, "goals": goals, "met": met}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
