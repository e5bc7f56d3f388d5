"""Thin entry point: parse args, build the Settings once, run the daemon.

    python run_daemon.py [--config clkt.toml]

Exit codes: 0 clean stop, 2 invalid config or refused start (store locked, port in use, foreign store).
A SIGTERM at any moment ends in a clean stop with exit 0 (see `clkt.process`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clkt.process import remember_early_stops

remember_early_stops()  # before the heavy imports: a SIGTERM while starting is a clean stop

from clkt.config import load_settings  # noqa: E402
from clkt.errors import ConfigError  # noqa: E402
from clkt.preflight import check_start  # noqa: E402
from clkt.process import run_daemon_process  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_daemon.py", description="Run the clkt daemon.")
    parser.add_argument("--config", "-c", type=Path, default=None, help="clkt.toml (default: the embedded offline demonstration)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
        check_start(settings)  # the whole config, before anything is created, written or opened
    except ConfigError as e:
        from clkt.logs import redact

        print(f"clkt: {redact(str(e))}", file=sys.stderr)
        return 2
    return run_daemon_process(settings)


if __name__ == "__main__":
    sys.exit(main())
