"""Condition waiters: `wait_for` (async), `wait_until` (a test or harness driving processes from synchronous
code) and `handles_signal` (whether a process catches a signal yet). Tests wait on conditions, never on fixed
sleeps. A module of its own, importing nothing of the product, so that the harnesses the benches share
(`tests/chaos_harness.py`) use them without `tests/conftest.py`'s environment defaults; the tests import them
from `tests.conftest`."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["handles_signal", "wait_for", "wait_until"]


async def wait_for(cond: Callable[[], object], *, timeout: float = 10.0, interval: float = 0.02) -> None:
    """Wait on a condition (sync or async callable), never on a fixed sleep."""
    deadline = time.monotonic() + timeout
    while True:
        res = cond()
        if asyncio.iscoroutine(res):
            res = await res
        if res:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {cond}")
        await asyncio.sleep(interval)


def wait_until(cond: Callable[[], object], *, timeout: float = 10.0, interval: float = 0.05, what: str = "") -> None:
    """`wait_for` for a test that drives processes from synchronous code (no event loop of its own): poll a
    condition, never a fixed sleep. `cond` may raise to stop the wait early (a process that died, say)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:.0f}s: {what or cond}")
        time.sleep(interval)


def handles_signal(pid: int, sig: signal.Signals) -> bool:
    """Whether process `pid` has installed a handler for `sig` (Linux: the SigCgt mask of /proc/<pid>/status):
    from then on the signal reaches the process's own code instead of the default action."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process is gone
        return False
    caught = next(int(ln.split()[1], 16) for ln in status.splitlines() if ln.startswith("SigCgt:"))
    return bool(caught >> (sig - 1) & 1)
