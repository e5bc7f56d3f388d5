"""Thin entry point: parse args, build the Settings once, run the daemon.

    python run_daemon.py [--config clkt.toml]

Exit codes: 0 clean stop, 2 invalid config or refused start (store locked, port in use, foreign store).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
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
        return asyncio.run(daemon.run())
    except ClktError as e:
        logging.getLogger("clkt").error("%s", e)
        print(f"clkt: {e}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_daemon.py", description="Run the clkt daemon.")
    parser.add_argument("--config", "-c", type=Path, default=None, help="clkt.toml (default: the embedded offline demonstration)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as e:
        print(f"clkt: {e}", file=sys.stderr)
        return 2
    return run_with_settings(settings)


if __name__ == "__main__":
    sys.exit(main())
