"""The leaderboard's figures kept in the store (issue 45 item 3): computed once, read back by any process.

A board's two costly steps are scoring each submitted pack's answers against this store's answer key and
computing each row's figures (pooling, the entity bootstrap). Both are functions of their content alone, so their
results are kept here under a key made of that content (`clkt.report.kept_figures` makes the keys, with a digest of
the code that computes them): `kind` "scored" (a submitted pack's answers as result packs) or "row" (a leaderboard
row's figures, JSON). A row whose key does not match is never read: another content or another code makes another
key, and the old entry ages out (`prune_figure_cache`). The table is a cache: deleting its rows loses nothing but
the time to compute them again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Column, LargeBinary, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import Field, SQLModel, col

from storage.types import UTCDateTime, utcnow

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = ["FigureCacheEntry", "keep_in_figure_cache", "prune_figure_cache", "read_figure_cache", "write_figure_cache"]

_CHUNK = 400  # keys per query (SQLite's bound-parameter limit is far above)


class FigureCacheEntry(SQLModel, table=True):
    __tablename__ = "figure_cache"

    key: str = Field(primary_key=True, max_length=64)  # sha256 hex of the content and the code (see above)
    kind: str = Field(max_length=16, index=True)  # "scored" | "row"
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    made_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


async def read_figure_cache(session: AsyncSession, keys: Collection[str]) -> dict[str, bytes]:
    """The payloads stored under `keys` (those present)."""
    wanted = sorted(set(keys))
    out: dict[str, bytes] = {}
    for i in range(0, len(wanted), _CHUNK):
        q = select(col(FigureCacheEntry.key), col(FigureCacheEntry.payload)).where(
            col(FigureCacheEntry.key).in_(wanted[i:i + _CHUNK]))
        out.update((str(k), bytes(p)) for k, p in (await session.execute(q)).all())
    return out


async def write_figure_cache(session: AsyncSession, kind: str, payloads: Mapping[str, bytes]) -> int:
    """Store `payloads` by key, replacing an entry of the same key (one that did not decode is written again);
    how many."""
    if not payloads:
        return 0
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    now = utcnow()
    rows = [{"key": k, "kind": kind, "payload": p, "made_at": now} for k, p in sorted(payloads.items())]
    for i in range(0, len(rows), _CHUNK):
        ins = (pg_insert if dialect == "postgresql" else sqlite_insert)(FigureCacheEntry).values(rows[i:i + _CHUNK])
        await session.execute(ins.on_conflict_do_update(
            index_elements=["key"], set_={"kind": ins.excluded.kind, "payload": ins.excluded.payload,
                                          "made_at": ins.excluded.made_at}))
    return len(rows)


async def keep_in_figure_cache(
    store: Store, batches: Mapping[str, Mapping[str, bytes]], *, older_than: datetime,
) -> str | None:
    """Write each kind's payloads (`batches`: kind -> key -> payload) and drop the entries made before `older_than`,
    in one transaction; None when done, else the error's class name (the caller goes on: a cache not written is
    computed again later)."""
    try:
        async with store.transaction() as s:
            for kind, payloads in batches.items():
                await write_figure_cache(s, kind, payloads)
            await prune_figure_cache(s, older_than=older_than)
    except SQLAlchemyError as e:
        return type(e).__name__
    return None


async def prune_figure_cache(session: AsyncSession, *, older_than: datetime) -> int:
    """Drop the entries made before `older_than` (a later board computes what it needs again); how many."""
    res = await session.execute(delete(FigureCacheEntry).where(col(FigureCacheEntry.made_at) < older_than))
    return int(getattr(res, "rowcount", 0) or 0)
