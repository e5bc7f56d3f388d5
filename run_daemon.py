"""Thin entry point: parse args, build the Settings once, run the daemon.

    python run_daemon.py [--config clkt.toml]

Exit codes: 0 clean stop, 2 invalid config or refused start (store locked, port in use, foreign store).

A SIGTERM at any moment ends in a clean stop with exit 0: during start-up (remembered, see below), while
running, a second one while stopping, or one after "stopped cleanly". Once stopped, the process exits at
once instead of waiting for worker threads (a model conversion can take a minute; it is atomic and
re-done next start).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

# A SIGTERM/SIGINT that arrives while the process is still starting is remembered and honoured as a clean
# stop once the daemon runs (its own handlers take over when its event loop starts).
_early_stop: list[str] = []


def _remember(signum: int, _frame: Any) -> None:
    _early_stop.append(signal.Signals(signum).name)


signal.signal(signal.SIGTERM, _remember)

from clkt.config import Settings, load_settings
from clkt.errors import ClktError, ConfigError
from clkt.logs import setup_logging


def run_with_settings(settings: Settings) -> int:
    from clkt.daemon import Daemon

    setup_logging(settings.log_level, secrets=settings.secrets.values())
    daemon = Daemon(settings=settings)

    def stop_now(signum: int, _frame: Any) -> None:
        daemon.request_stop(f"{signal.Signals(signum).name} during start-up")

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_now)
    if _early_stop:
        daemon.request_stop(f"{_early_stop[0]} during start-up")
    try:
        rc = _run_without_waiting_for_threads(daemon.run())
    except ClktError as e:
        logging.getLogger("clkt").error("%s", e)
        from clkt.logs import redact

        print(f"clkt: {redact(str(e))}", file=sys.stderr)
        rc = 2
    except Exception as e:  # noqa: BLE001 - one line on stderr; the (redacted) traceback only at DEBUG
        from clkt.cli import describe_error, one_line

        logging.getLogger("clkt").debug("the daemon failed", exc_info=True)
        msg, rc = describe_error(e)
        print(f"clkt: {one_line(msg)}", file=sys.stderr)
    _exit_now_if_threads_linger(rc)
    return rc


def _ignore_late_signal(signum: int, _frame: Any) -> None:
    logging.getLogger("clkt").info("%s after the stop: already exiting", signal.Signals(signum).name)


def _run_without_waiting_for_threads(coro: Any) -> int:
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


def _exit_now_if_threads_linger(rc: int) -> None:
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if lingering:
        logging.getLogger("clkt").info("exiting without waiting for %d worker thread(s)", len(lingering))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_daemon.py", description="Run the clkt daemon.")
    parser.add_argument("--config", "-c", type=Path, default=None, help="clkt.toml (default: the embedded offline demonstration)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as e:
        from clkt.logs import redact

        print(f"clkt: {redact(str(e))}", file=sys.stderr)
        return 2
    return run_with_settings(settings)


if __name__ == "__main__":
    sys.exit(main())
