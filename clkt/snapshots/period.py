"""Snapshot periods in UTC: monthly (`2025-06`), weekly (ISO week, `2025-W23`), daily (`2025-06-14`) or
rolling (`2025-06-14`: the `rolling_days` complete days ending with that day).

A period is the half-open interval `[start, end)`; its label is what appears in snapshot ids and paths.
A rolling window only covers complete days: the window "of" a moment ends at 00:00 UTC of that day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from clkt.errors import UserError

__all__ = ["ROLLING_DAYS", "Cadence", "Period", "PeriodError", "parse_period", "period_of", "previous_period"]

Cadence = Literal["monthly", "weekly", "daily", "rolling"]
ROLLING_DAYS = 30

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


class PeriodError(UserError):
    """A period label that does not parse for the cadence."""


@dataclass(frozen=True, kw_only=True)
class Period:
    cadence: Cadence
    label: str
    start: datetime  # inclusive, aware UTC
    end: datetime  # exclusive, aware UTC

    def contains(self, ts: datetime) -> bool:
        return self.start <= ts < self.end

    def is_closed(self, now: datetime) -> bool:
        return now >= self.end

    @property
    def month(self) -> str:
        """The YYYY-MM of the period's start (used in snapshot ids)."""
        return self.start.strftime("%Y-%m")


def _utc(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month(year: int, month: int) -> Period:
    start = date(year, month, 1)
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return Period(cadence="monthly", label=f"{year:04d}-{month:02d}", start=_utc(start), end=_utc(end))


def _week(year: int, week: int) -> Period:
    start = date.fromisocalendar(year, week, 1)
    return Period(
        cadence="weekly", label=f"{year:04d}-W{week:02d}", start=_utc(start), end=_utc(start + timedelta(days=7))
    )


def _day(d: date) -> Period:
    return Period(cadence="daily", label=d.isoformat(), start=_utc(d), end=_utc(d + timedelta(days=1)))


def _rolling(last_day: date, days: int) -> Period:
    end = last_day + timedelta(days=1)
    return Period(cadence="rolling", label=last_day.isoformat(), start=_utc(end - timedelta(days=days)), end=_utc(end))


def period_of(ts: datetime, cadence: Cadence, *, rolling_days: int = ROLLING_DAYS) -> Period:
    """The period of the given cadence that contains `ts` (aware); for `rolling`, the window of complete
    days that ends just before `ts`'s day."""
    if ts.tzinfo is None:
        raise UserError(f"naive datetime {ts!r}: periods are computed in UTC")
    d = ts.astimezone(UTC).date()
    if cadence == "rolling":
        return _rolling(d - timedelta(days=1), rolling_days)
    if cadence == "monthly":
        return _month(d.year, d.month)
    if cadence == "weekly":
        iso = d.isocalendar()
        return _week(iso.year, iso.week)
    return _day(d)


def previous_period(p: Period) -> Period:
    if p.cadence == "rolling":
        return _rolling(p.start.date() - timedelta(days=1), (p.end - p.start).days)
    return period_of(p.start - timedelta(seconds=1), p.cadence)


def parse_period(label: str, cadence: Cadence, *, rolling_days: int = ROLLING_DAYS) -> Period:
    """Parse a label for the cadence; a clear `PeriodError` otherwise."""
    text = label.strip()
    try:
        if cadence == "monthly" and (m := _MONTH.match(text)):
            year, month = int(m[1]), int(m[2])
            if not 1 <= month <= 12:
                raise ValueError(f"month {month} out of range")
            return _month(year, month)
        if cadence == "weekly" and (m := _WEEK.match(text)):
            return _week(int(m[1]), int(m[2]))
        if cadence == "daily" and (m := _DAY.match(text)):
            return _day(date(int(m[1]), int(m[2]), int(m[3])))
        if cadence == "rolling" and (m := _DAY.match(text)):
            return _rolling(date(int(m[1]), int(m[2]), int(m[3])), rolling_days)
    except ValueError as e:
        raise PeriodError(f"invalid period {label!r}: {e}") from None
    form = {"monthly": "YYYY-MM", "weekly": "YYYY-Www", "daily": "YYYY-MM-DD", "rolling": "YYYY-MM-DD (last day)"}[cadence]
    raise PeriodError(f"invalid period {label!r} for the {cadence} cadence: expected {form}")
