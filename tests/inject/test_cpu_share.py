"""While GPU jobs run on this machine's CPU, the daemon's own model work keeps to the cores they leave
(`clkt.cpu_share`), in the worker thread that runs it (torch's thread count is per thread), and takes them back
when the last job ends; a real `LocalEngine` job process registers and unregisters itself."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from clkt import cpu_share


@pytest.fixture
def four_cores() -> Iterator[None]:
    before = torch.get_num_threads()
    cpu_share.reset(4)
    yield
    cpu_share.reset()
    torch.set_num_threads(before)


def _in_worker(ex: cf.ThreadPoolExecutor) -> tuple[int | None, int]:
    def run() -> tuple[int | None, int]:
        a = torch.ones(64, 64)
        (a @ a).sum()  # the thread's first parallel call fixes its count
        return cpu_share.apply_here(), torch.get_num_threads()
    return ex.submit(run).result()


def test_jobs_narrow_the_worker_thread_and_give_the_cores_back(four_cores: None) -> None:
    torch.set_num_threads(4)
    with cf.ThreadPoolExecutor(1) as ex:
        assert _in_worker(ex) == (None, 4)  # no job: the thread's own count
        cpu_share.job_started(1, 1)
        assert cpu_share.model_threads() == 3 and _in_worker(ex) == (3, 3)
        cpu_share.job_started(2, None)  # a job on every core: the daemon keeps one
        assert cpu_share.model_threads() == 1 and _in_worker(ex) == (1, 1)
        cpu_share.job_ended(2)
        assert _in_worker(ex) == (3, 3)
        cpu_share.job_ended(1)
        cpu_share.job_ended(1)  # ending twice changes nothing
        assert cpu_share.model_threads() is None and _in_worker(ex) == (None, 4)  # its own count again


def test_never_more_than_the_thread_had(four_cores: None) -> None:
    torch.set_num_threads(2)
    with cf.ThreadPoolExecutor(1) as ex:
        cpu_share.job_started(7, 1)  # 3 cores left, but the thread ran on 2
        assert _in_worker(ex) == (2, 2)
        cpu_share.job_ended(7)


async def test_a_local_cpu_job_is_registered_while_its_process_runs(four_cores: None, tmp_path: Path) -> None:
    from clkt.inject.local_engine import LocalRun

    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(0.5)")
    cpu_share.job_started(5, 2)
    run = LocalRun(proc, device="cpu", on_end=lambda: cpu_share.job_ended(5))
    assert await run.wait(0.01) is None and cpu_share.model_threads() == 2  # still running: still registered
    end = await run.wait(10)
    assert end is not None and end.returncode == 0
    assert cpu_share.model_threads() is None


async def test_a_stopped_job_gives_its_cores_back(four_cores: None) -> None:
    from clkt.inject.local_engine import LocalRun

    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)",
                                                start_new_session=True)
    cpu_share.job_started(6, 1)
    run = LocalRun(proc, device="cpu", on_end=lambda: cpu_share.job_ended(6))
    assert cpu_share.model_threads() == 3
    await run.stop()
    assert proc.returncode is not None and cpu_share.model_threads() is None


def test_the_cpu_runs_as_many_jobs_as_its_cores_and_memory_hold(four_cores: None) -> None:
    gb = 2**30
    assert cpu_share.job_slots(1, memory_bytes=64 * gb) == 4  # 4 cores at 1 thread each
    assert cpu_share.job_slots(2, memory_bytes=64 * gb) == 2
    assert cpu_share.job_slots(3, memory_bytes=64 * gb) == 1
    assert cpu_share.job_slots(8, memory_bytes=64 * gb) == 1  # wider than the machine: still one
    assert cpu_share.job_slots(None, memory_bytes=64 * gb) == 1  # unset: a job takes every core
    assert cpu_share.job_slots(1, memory_bytes=int(9 * gb)) == 2  # 4 GB a job
    assert cpu_share.job_slots(1, memory_bytes=2 * gb) == 1  # never none
    assert cpu_share.job_slots(1, 3, memory_bytes=2 * gb) == 3  # gpu.cpu_jobs decides when set
    assert cpu_share.job_slots(1) >= 1  # this machine's memory


def test_the_cpu_device_has_a_slot_per_job_other_devices_one() -> None:
    from clkt.inject.local_engine import LocalEngine

    engine = LocalEngine(devices=["cpu", "cuda:0", "cpu"], cpu_jobs=3)
    assert engine.slots() == ["cpu", "cpu#2", "cpu#3", "cuda:0"]  # a device named twice is one device
    assert [engine.device_of(s) for s in engine.slots()] == ["cpu", "cpu", "cpu", "cuda:0"]
    assert LocalEngine(devices=["cpu"]).slots() == ["cpu"]


def test_cpu_jobs_below_one_is_refused_by_name() -> None:
    import pydantic

    from clkt.config import GpuSettings

    with pytest.raises(pydantic.ValidationError, match="cpu_jobs"):
        GpuSettings(cpu_jobs=0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own niceness is Linux's")
async def test_the_model_thread_yields_the_cpu_while_a_job_runs_and_takes_it_back(four_cores: None) -> None:
    import os
    import threading

    def nice_now() -> tuple[str, int]:
        cpu_share.apply_here()
        return threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    caller = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    name, before = await cpu_share.run_model_work(nice_now)
    assert name.startswith("clkt-model")
    cpu_share.job_started(9, 1)
    try:
        _, during = await cpu_share.run_model_work(nice_now)
        assert during == min(19, before + cpu_share.YIELD_NICE)
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == caller  # the caller's thread keeps its own
    finally:
        cpu_share.job_ended(9)
    _, after = await cpu_share.run_model_work(nice_now)
    assert after == (before if os.geteuid() == 0 else during)  # back, where lowering a niceness is allowed
