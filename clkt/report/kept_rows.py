"""A board's rows read from and kept in the store's figure cache (`storage.figure_cache`, `clkt.report.kept_figures`).

Before a board is built, the rows it needs that this process has not computed are read from the figure cache in one
query and put in the process's row table (`clkt.report.leaderboard.ROWS`); the board is then built as always (a kept
row is read, a missing one computed); after it, the rows and submitted packs it computed are written to the figure
cache, so the next process, or the next board after a new pack, computes only what is new. Writing is best effort:
a store that cannot be written (or a race with another writer) leaves the board as it is and is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from clkt.report.kept_figures import ROW, SCORED, decode_row, encode_row, row_store_key
from clkt.report.leaderboard import ROWS
from storage.figure_cache import keep_in_figure_cache, read_figure_cache
from storage.types import utcnow

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = ["KEEP_DAYS", "keep_figures", "read_kept_rows"]

KEEP_DAYS = 90  # a figure cache entry older than this is dropped when new ones are written (computed again if needed)
log = logging.getLogger(__name__)


async def read_kept_rows(store: Store, keys: Sequence[str]) -> set[str]:
    """Put the kept rows of `keys` that this process lacks into its row table; the keys that were computed (here
    before, or read now)."""
    missing = [k for k in keys if not ROWS.peek(k)[0]]
    if not missing:
        return set(keys)
    by_store = {row_store_key(k): k for k in missing}
    async with store.session() as s:
        got = await read_figure_cache(s, list(by_store))
    read: set[str] = set()
    for stored_key, payload in got.items():
        ok, row = decode_row(payload)
        if ok:  # one that does not decode is computed again and written over: never trusted
            ROWS.put(by_store[stored_key], row)
            read.add(by_store[stored_key])
    return {k for k in keys if k not in missing or k in read}


async def keep_figures(store: Store, *, rows: Sequence[str], had: set[str], scored: Mapping[str, bytes]) -> None:
    """Write the rows of `rows` not in `had` (computed by this board) and the packs `scored` by it to the figure
    cache (best effort: see the module docstring)."""
    new_rows: dict[str, bytes] = {}
    for k in rows:
        found, row = ROWS.peek(k)
        if found and k not in had:
            new_rows[row_store_key(k)] = encode_row(row)
    if not new_rows and not scored:
        return
    error = await keep_in_figure_cache(store, {ROW: new_rows, SCORED: scored}, older_than=utcnow() - timedelta(days=KEEP_DAYS))
    if error is not None:
        log.warning("leaderboard figures not kept in the store (computed again next time): %s", error)
