"""Re-dating: move recorded items into a recent window, deterministically, keeping their order.

The replay server serves old recordings (1994 to 2024). For the offline demonstration they must look
fresh enough to pass the temporal gate, so each source's items are spread over the window
`[end - days, end)` by the rank of their original date: the i-th of k distinct dates lands on
`end - days + round((i + 1) * days / (k + 1))` days. Every date inside an item moves by the same whole
number of days (its *delta*), so the item stays self-consistent: times of day, the gaps between a film's
premiere and its DVD release, a quake's `updated` after its `time`.

`shift_json` rewrites: ISO dates (`2023-11-01`, also inside text and datetimes), RFC 822 dates
(`Tue, 10 Dec 2024 18:09:57 GMT`), partial MusicBrainz dates (`1977`, `2011-09`) under date keys,
epoch-millisecond integers under the USGS time keys, season years (`2014-2015`), and any exact textual
variants of the item's own datetime passed in `variants` (GDACS prose such as `10/12/2024 18:04`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

__all__ = ["RedatePlan", "plan_redate", "shift_json", "shift_text", "text_variants"]

_ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d])")
_RFC822 = re.compile(
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
    r"\d{2}:\d{2}:\d{2} (?:GMT|UTC|[+-]\d{4})"
)
_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{2}))?$")
_SEASON = re.compile(r"^(\d{4})(?:([-/])(\d{4}))?$")
EPOCH_MS_KEYS = frozenset({"time", "updated", "indexTime", "updateTime", "lastModified"})
PARTIAL_DATE_KEYS = frozenset({"date", "first-release-date"})
SEASON_KEYS = frozenset({"strSeason"})


@dataclass(frozen=True, slots=True)
class RedatePlan:
    """Per item id: the whole-day shift to apply."""

    deltas: dict[str, timedelta]
    end: date
    days: int

    def delta(self, item_id: str) -> timedelta:
        return self.deltas.get(item_id, timedelta(0))


def plan_redate(originals: Mapping[str, datetime], *, end: date, days: int) -> RedatePlan:
    """Spread the items' original dates over `[end - days, end)` by rank of distinct date."""
    distinct = sorted({dt.astimezone(UTC).date() for dt in originals.values()})
    k = len(distinct)
    start = end - timedelta(days=days)
    target: dict[date, date] = {}
    for i, d in enumerate(distinct):
        offset = round((i + 1) * days / (k + 1))
        target[d] = min(start + timedelta(days=offset), end - timedelta(days=1))
    deltas = {
        item_id: timedelta(days=(target[dt.astimezone(UTC).date()] - dt.astimezone(UTC).date()).days)
        for item_id, dt in originals.items()
    }
    return RedatePlan(deltas=deltas, end=end, days=days)


def _shift_iso(m: re.Match[str], delta: timedelta) -> str:
    try:
        d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return m.group(0)
    return (d + delta).isoformat()


def _shift_rfc822(m: re.Match[str], delta: timedelta) -> str:
    try:
        dt = parsedate_to_datetime(m.group(0))
    except (TypeError, ValueError):
        return m.group(0)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return format_datetime((dt + delta).astimezone(UTC), usegmt=True)


def text_variants(dt: datetime) -> list[str]:
    """Textual renderings of a datetime seen in GDACS prose (day-first and US month-first)."""
    dt = dt.astimezone(UTC)
    hour12 = dt.hour % 12 or 12
    ampm = "AM" if dt.hour < 12 else "PM"
    return [
        f"{dt.month}/{dt.day}/{dt.year} {hour12}:{dt.minute:02d}:{dt.second:02d} {ampm}",
        f"{dt.day:02d}/{dt.month:02d}/{dt.year} {dt.hour:02d}:{dt.minute:02d}",
    ]


def shift_text(s: str, delta: timedelta, *, variants: Iterable[tuple[str, str]] = ()) -> str:
    if not delta:
        return s
    for old, new in variants:
        if old in s:
            s = s.replace(old, new)
    s = _RFC822.sub(lambda m: _shift_rfc822(m, delta), s)
    return _ISO_DATE.sub(lambda m: _shift_iso(m, delta), s)


def _shift_partial(s: str, delta: timedelta) -> str | None:
    m = _PARTIAL.match(s)
    if not m:
        return None
    d = date(int(m.group(1)), int(m.group(2) or 1), 1) + delta
    return f"{d.year:04d}" if m.group(2) is None else f"{d.year:04d}-{d.month:02d}"


def _shift_season(s: str, years: int) -> str:
    m = _SEASON.match(s)
    if not m or not years:
        return s
    out = str(int(m.group(1)) + years)
    if m.group(3):
        out += m.group(2) + str(int(m.group(3)) + years)
    return out


def shift_json(obj: Any, delta: timedelta, *, years: int = 0, variants: Iterable[tuple[str, str]] = ()) -> Any:
    """A deep copy of `obj` with every recognised date moved by `delta` (whole days)."""
    if not delta:
        return obj
    pairs = list(variants)
    ms = int(delta.total_seconds() * 1000)

    def walk(x: Any, key: str | None) -> Any:
        if isinstance(x, dict):
            return {k: walk(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, key) for v in x]
        if isinstance(x, bool):
            return x
        if isinstance(x, int) and key in EPOCH_MS_KEYS and x > 10**11:
            return x + ms
        if isinstance(x, str):
            if key in PARTIAL_DATE_KEYS:
                partial = _shift_partial(x, delta)
                if partial is not None:
                    return partial
            if key in SEASON_KEYS:
                return _shift_season(x, years)
            return shift_text(x, delta, variants=pairs)
        return x

    return walk(obj, None)
