"""The daemon as an operating-system process: signals from the first moment, exit codes, the event loop.

`remember_early_stops()` installs a SIGTERM handler that only records the signal; call it before the heavy
imports (torch, transformers, pydantic-ai take seconds), so a SIGTERM while the process is still starting is
honoured as a clean stop once the daemon runs. `run_daemon_process(settings)` runs the daemon and returns
the exit code: 0 clean stop, 2 invalid config or refused start (store locked, port in use, foreign store),
1 anything else (one redacted line on stderr; the traceback only at DEBUG).

With `[daemon] clock_start` (a test setting), the process's clock is a `clkt.clock.SimulatedClock` from that
moment at `clock_speed` times real time, installed before anything reads the time (`install_daemon_clock`).

Once stopped, the process exits at once instead of waiting for worker threads (a model conversion can take a
minute; it is atomic and re-done next start). This module imports nothing heavy at import time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clkt.config import DaemonSettings, Settings

__all__ = [
    "exit_now_if_threads_linger", "install_daemon_clock", "remember_early_stops", "run_daemon_process",
    "run_without_waiting_for_threads",
]

_early_stop: list[str] = []


def _remember(signum: int, _frame: Any) -> None:
    _early_stop.append(signal.Signals(signum).name)


def remember_early_stops() -> None:
    """Record a SIGTERM that arrives before the daemon's own handlers exist (idempotent)."""
    if signal.getsignal(signal.SIGTERM) is not _remember:
        signal.signal(signal.SIGTERM, _remember)


def install_daemon_clock(daemon: DaemonSettings) -> bool:
    """Install the simulated calendar `daemon.clock_start` / `clock_speed` as the process's clock (True), or
    leave the system clock (False, when no start is set)."""
    from clkt import clock

    if daemon.clock_start is None:
        return False
    clock.install(clock.SimulatedClock(start=daemon.clock_start, speed=daemon.clock_speed))
    logging.getLogger("clkt").warning(
        "SIMULATED CLOCK: the daemon's calendar starts at %s and runs %gx faster than real time (a simulated day "
        "lasts %.1f real seconds); request-rate limits of the upstreams stay in real time",
        daemon.clock_start.isoformat(), daemon.clock_speed, 86400 / daemon.clock_speed,
    )
    return True


def run_daemon_process(settings: Settings) -> int:
    from clkt.daemon import Daemon
    from clkt.errors import ClktError
    from clkt.logs import redact, setup_logging

    ret = settings.retention  # the daemon's log file, rotated (none: stderr only)
    setup_logging(settings.log_level, secrets=settings.secrets.values(), log_file=ret.log_file(settings.data_dir),
                  max_bytes=ret.daemon_log_max_bytes, backups=ret.daemon_log_backups)
    install_daemon_clock(settings.daemon)
    daemon = Daemon(settings=settings)

    def stop_now(signum: int, _frame: Any) -> None:
        daemon.request_stop(f"{signal.Signals(signum).name} during start-up")

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_now)
    if _early_stop:
        daemon.request_stop(f"{_early_stop[0]} during start-up")
    try:
        rc = run_without_waiting_for_threads(daemon.run())
    except ClktError as e:
        logging.getLogger("clkt").error("%s", e)
        print(f"clkt: {redact(str(e))}", file=sys.stderr)
        rc = 2
    except Exception as e:
        from clkt.messages import describe_error, one_line

        logging.getLogger("clkt").debug("the daemon failed", exc_info=True)
        msg, rc = describe_error(e)
        print(f"clkt: {one_line(msg)}", file=sys.stderr)
    exit_now_if_threads_linger(rc)
    return rc


def _ignore_late_signal(signum: int, _frame: Any) -> None:
    logging.getLogger("clkt").info("%s after the stop: already exiting", signal.Signals(signum).name)


def run_without_waiting_for_threads(coro: Coroutine[Any, Any, int]) -> int:
    """`asyncio.run` without its wait for the default executor's threads (`loop.close()` does not wait)."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return int(loop.run_until_complete(coro))
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):  # the loop's handlers go with it: stay a clean stop
            signal.signal(sig, _ignore_late_signal)
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def exit_now_if_threads_linger(rc: int) -> None:
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if lingering:
        logging.getLogger("clkt").info("exiting without waiting for %d worker thread(s)", len(lingering))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
