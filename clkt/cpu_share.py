"""The cores of this machine's CPU between GPU jobs run on it and this process's own model work.

A GPU job on the `cpu` device (`clkt.inject.local_engine`) runs in a child process on `gpu.torch_threads` threads
(all the cores when unset), beside the daemon's own model work in this process (the probe, the in-context track).
Both at full width oversubscribe the cores: in `bench/year.py` on 2 cores the job ran at 81 % of a core beside a
daemon at 119 %, which slowed the job without speeding the probe. So while jobs run on the CPU, this process's
model work keeps to the cores they leave (at least one), and takes them back when the last one ends.

The daemon's model work runs in one thread of its own (`run_model_work`: the probe's generations, the in-context
track's local scoring), and while a job runs on the CPU that thread runs at `YIELD_NICE` (Linux: a thread's own
niceness), so it takes the cycles the jobs leave rather than a share of theirs: in `bench/year.py` the probes kept
0.8 of a core busy beside two one-thread jobs on 2 cores, and the jobs trained at half their quiet speed. Its
niceness goes back once no job runs (where the user may lower it again: root, or RLIMIT_NICE).

How many jobs the `cpu` device runs at once (`job_slots`): `gpu.cpu_jobs` when set; else as many as the cores hold
at `gpu.torch_threads` each and the memory at `CPU_JOB_GB` each (a job of the 270M target peaks at 3.2 GB), one
when `torch_threads` is unset (a job on every core). In `bench/year.py` (2 cores, 1 thread a job) one job at a
time left a core idle once the daemon's probes were batched, while the GPU months' four jobs queued behind each
other.

torch's thread count belongs to each thread that runs a model (it is read once per thread, at its first parallel
call), not to the process: the local model work calls `apply_here()` in its own worker thread before it runs.
Part of the kernel: it imports nothing of the product, and torch only when something else already has.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["CPU_JOB_GB", "YIELD_NICE", "apply_here", "job_ended", "job_slots", "job_started", "model_threads", "reset",
           "run_model_work"]

T = TypeVar("T")
log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_RUNNING: dict[int, int] = {}  # job id -> the threads it runs on
_CORES = [max(1, os.cpu_count() or 1)]
_LOCAL = threading.local()  # .own: the thread's count before it was narrowed
YIELD_NICE = 10  # added to the model thread's niceness while a job runs on the CPU
_EXECUTOR: list[ThreadPoolExecutor] = []  # the model thread's (made at first use)
CPU_JOB_GB = 4.0  # the memory one job on the CPU is counted at when `job_slots` chooses (a 270M target's: 3.2 GB)


def job_slots(threads: int | None, configured: int | None = None, *, memory_bytes: int | None = None) -> int:
    """Jobs the `cpu` device runs at once: `configured` when set; else the cores over `threads` (1 when None:
    each job takes every core), at most the memory (`memory_bytes`, None: this machine's) over `CPU_JOB_GB`."""
    if configured is not None:
        return configured
    if not threads:
        return 1
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # no sysconf: the cores decide
            memory_bytes = 0
    by_memory = int(memory_bytes // (CPU_JOB_GB * 2**30)) if memory_bytes else _CORES[0]
    return max(1, min(_CORES[0] // threads, by_memory))


def job_started(job_id: int, threads: int | None) -> None:
    """Job `job_id` runs on this machine's CPU with `threads` torch threads (None: every core)."""
    with _LOCK:
        _RUNNING[job_id] = min(_CORES[0], threads or _CORES[0])


def job_ended(job_id: int) -> None:
    with _LOCK:
        _RUNNING.pop(job_id, None)


def model_threads() -> int | None:
    """The threads this process's model work may use now; None while no job runs on the CPU (its own count)."""
    with _LOCK:
        if not _RUNNING:
            return None
        return max(1, _CORES[0] - sum(_RUNNING.values()))


async def run_model_work(fn: Callable[..., T], /, *args: Any) -> T:
    """`fn(*args)` in this process's model thread (one, so model work never runs beside itself), with the
    caller's context variables."""
    with _LOCK:
        if not _EXECUTOR:
            _EXECUTOR.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="clkt-model"))
        ex = _EXECUTOR[0]
    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(ex, functools.partial(ctx.run, fn, *args))


def _yield_cpu(jobs_run: bool) -> None:
    """The calling thread at its own niceness + `YIELD_NICE` while jobs run, back at its own after (Linux only:
    elsewhere a priority is the whole process's)."""
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    own = getattr(_LOCAL, "nice", None)
    try:
        if jobs_run and own is None:
            _LOCAL.nice = own = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, own + YIELD_NICE))
        elif not jobs_run and own is not None:
            os.setpriority(os.PRIO_PROCESS, tid, own)
            _LOCAL.nice = None
    except OSError as e:  # lowering it again needs root or RLIMIT_NICE: it stays yielding (tried again next time)
        log.debug("cannot change the model thread's priority: %s", e)


def apply_here() -> int | None:
    """Set the calling thread's torch threads to `model_threads()` (or back to its own count once no job runs),
    and its niceness (`_yield_cpu`); the count set, or None when nothing was narrowed (or torch is not loaded)."""
    want = model_threads()
    _yield_cpu(want is not None)
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    own = getattr(_LOCAL, "own", None)
    if want is None:
        if own is not None:
            torch.set_num_threads(own)
            _LOCAL.own = None
        return None
    if own is None:
        own = _LOCAL.own = int(torch.get_num_threads())
    n = max(1, min(own, want))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def reset(cores: int | None = None) -> None:
    """No job running, and `cores` cores (tests; None: this machine's)."""
    with _LOCK:
        _RUNNING.clear()
        _CORES[0] = max(1, cores or os.cpu_count() or 1)
