"""The column fields the tables share: a UTC timestamp (now by default, or optional) and a JSON document."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column
from sqlmodel import Field

from storage.types import JSONType, UTCDateTime, utcnow

__all__ = ["json_field", "ts_field", "ts_opt_field"]


def ts_field(**kw: Any) -> Any:
    """A UTC timestamp column, now by default."""
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kw)


def ts_opt_field(**kw: Any) -> Any:
    """An optional UTC timestamp column (None by default)."""
    return Field(default=None, sa_type=UTCDateTime, **kw)


def json_field(default_factory: Any = dict) -> Any:
    """A JSON column, not null, `default_factory()` by default."""
    return Field(default_factory=default_factory, sa_column=Column(JSONType, nullable=False))
