"""How the replayed APIs read query parameters, shared by every domain folder's `replay.py` in both modes (a bad
value is the 400 the real API answers)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from aiohttp import web

__all__ = ["parse_day", "parse_time", "query_int"]

def parse_day(s: str | None) -> date | None:
    """A day (`2026-01-31`, or the day of a timestamp); none, empty or `*` (an open end of a range): None."""
    if not s or s == "*":
        return None
    try:
        return date.fromisoformat(s[:10])
    except ValueError:
        raise web.HTTPBadRequest(text=f"invalid date {s!r}") from None


def parse_time(s: str | None) -> datetime | None:
    """An ISO timestamp (`Z` allowed; one without a zone is UTC), as USGS reads `starttime` / `endtime`."""
    if not s:
        return None
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise web.HTTPBadRequest(text=f"Bad starttime/endtime value {s!r}") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def query_int(q: Any, name: str, default: int) -> int:
    try:
        return int(q.get(name, default))
    except ValueError:
        raise web.HTTPBadRequest(text=f"invalid {name}") from None
