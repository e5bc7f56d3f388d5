"""`clkt leaderboard`'s results kept on disk between runs: a query's leaderboard is computed once per state of the
store and read back while the store has not changed.

A result is a file `<data_dir>/cache/leaderboard/<key>.json` (the `Leaderboard` as JSON), its key a hash of the
query (every option: window, strategy, scorer, targets, comparison, seed, draws, minimum), of the store's
`window_fingerprint` (counts and latest times of the snapshots, finished jobs, validity rows, exclusions and result
packs: any change to what the leaderboard reads changes it) and of `CACHE_VERSION` with clkt's version (a release
that computes differently never reads an older file). A hit is checked (it must parse as a `Leaderboard`; a file
that does not is computed afresh and replaced), a miss is computed and written to a temporary file, then renamed, so
a reader never sees half a file; the newest `CACHE_KEEP` files are kept. Reading a hit takes the store's
fingerprint and one file, not the statistics' imports: the command answers in about half the time. A miss reads
the rows an earlier process computed from the store's figure cache (`clkt.report.kept_rows`). `--no-cache`
computes afresh, every row included (and stores the result).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from clkt import __version__
from clkt.layout import BOARD_CACHE_KEEP, board_cache_dir
from clkt.report.leaderboard_data import Leaderboard, LeaderboardQuery

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = ["CACHE_KEEP", "CACHE_VERSION", "board_cache_dir", "cache_key", "cached_leaderboard"]

CACHE_VERSION = 6  # raise when the statistics or the cached shape change without a new clkt version (3: submitted
# rows; 4: one learned rule over seeds, rows' own bootstrap draws, kept %'s minimum on the board; 5: only verified
# rows rank; 6: the open track's rows apart, with the jury's)
CACHE_KEEP = BOARD_CACHE_KEEP  # result files kept (the newest); the folder is `clkt.layout.board_cache_dir`

def cache_key(q: LeaderboardQuery, fingerprint: tuple[object, ...]) -> str:
    blob = json.dumps([CACHE_VERSION, __version__, dataclasses.asdict(q), [str(x) for x in fingerprint]], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


async def cached_leaderboard(store: Store, q: LeaderboardQuery, *, cache_dir: Path, refresh: bool = False) -> tuple[Leaderboard, bool]:
    """The query's leaderboard and whether it was read from `cache_dir` (see the module docstring); refused queries
    raise `LeaderboardError` as `load_leaderboard` does, and leave no file."""
    from storage.fingerprints import window_fingerprint

    async with store.session() as s:
        fingerprint = await window_fingerprint(s)
    path = cache_dir / f"{cache_key(q, fingerprint)}.json"
    if not refresh:
        try:
            return Leaderboard.model_validate_json(path.read_bytes()), True
        except (OSError, ValidationError, ValueError):
            pass  # none yet, or unreadable: computed afresh below
    from clkt.report.window import load_leaderboard

    board = await load_leaderboard(store, q, recompute=refresh)  # --no-cache: every row computed again too
    _write(path, board)
    return board, False


def _write(path: Path, board: Leaderboard) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_text(board.model_dump_json(), encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        files = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[CACHE_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only or full data dir: the result is still printed, only not kept
