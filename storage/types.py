"""Column types shared by the tables (timezone-aware UTC datetimes, JSON) and the typed reads of a result
(rows an UPDATE/DELETE touched, the id of a stored row)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.types import TypeDecorator

from clkt import clock as _clock

__all__ = ["JSONType", "UTCDateTime", "affected_rows", "stored_id", "utcnow"]


def utcnow() -> datetime:
    """Now, aware UTC, by the process's clock (`clkt.clock`: real time unless a simulated clock is installed)."""
    return _clock.now()


def affected_rows(result: Result[*tuple[Any, ...]]) -> int:
    """How many rows an INSERT/UPDATE/DELETE touched (0 when the driver cannot say). The session types every
    result as `Result`; a DML statement's is a `CursorResult`, which alone has `rowcount`."""
    if not isinstance(result, CursorResult):
        raise TypeError(f"no row count on a {type(result).__name__}: not the result of an INSERT, UPDATE or DELETE")
    return int(result.rowcount or 0)


def stored_id(value: int | None) -> int:
    """The id of a row read back from the store (its column is optional only until the row is inserted)."""
    if value is None:
        raise ValueError("a stored row without an id")
    return value


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: SQLite has no time zones, PostgreSQL uses timestamptz."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} given to a UTC column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


JSONType = JSON().with_variant(JSON(none_as_null=True), "postgresql")
