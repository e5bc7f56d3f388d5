"""Teardown of a group of asyncio tasks: cancel what still runs, then wait for all of them to end.

Every loop that owns tasks (the supervisor, stage workers, pollers, the GPU consumer) ends them with
`cancel_and_wait`, so none is left running and none leaves an unretrieved exception behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel every task not yet done and wait until each has ended (their exceptions are retrieved)."""
    group = list(tasks)
    for t in group:
        if not t.done():
            t.cancel()
    if group:
        await asyncio.gather(*group, return_exceptions=True)
