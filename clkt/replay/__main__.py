"""`python -m clkt.replay [--port N] [--redate] [--end YYYY-MM-DD] [--days N]`: serve the recordings."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from datetime import date

from clkt.config import ReplaySettings
from clkt.replay.server import ReplayServer


async def _main(args: argparse.Namespace) -> None:
    settings = ReplaySettings(
        enabled=True, redate=args.redate, redate_end=date.fromisoformat(args.end) if args.end else None,
        redate_days=args.days,
    )
    async with ReplayServer(settings=settings, host=args.host, port=args.port) as server:
        print(f"replay server on {server.url} (sources under /<name>; stats at /_control/stats)", flush=True)
        if server.window:
            print(f"RE-DATED: recorded items moved into {server.window[0]}..{server.window[1]}", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m clkt.replay", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8766)
    p.add_argument("--redate", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--end", default=None, help="last day of the re-dating window (default today)")
    p.add_argument("--days", type=int, default=28)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args))


if __name__ == "__main__":
    main()
