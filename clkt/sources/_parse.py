"""Small typed accessors for parsing API payloads: every failure is a `PayloadError` naming the field.

APIs drift: numbers arrive as strings (TheSportsDB always does), fields go missing or turn null. These
helpers accept the tolerable variants (a numeric string for a number) and reject the rest clearly.
`guard()` turns any other exception a parser might still raise into a `PayloadError`, so nothing but a
`PayloadError` ever leaves a parser. `each()` parses the items of a list page one by one: a bad item is
skipped with its reason (kept on the returned `Items.skipped`), its neighbours go on. `bounded()` refuses
implausible numbers (latitude 200, magnitude -999, a negative score); `opt_str` caps a text field at
`MAX_TEXT_CHARS` so a huge field never reaches documents, prompts or exports.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, ParamSpec, TypeVar
from xml.etree import ElementTree as ET

from pydantic import ValidationError

from clkt.errors import PayloadError

__all__ = [
    "MAX_TEXT_CHARS",
    "MAX_YEAR",
    "MIN_YEAR",
    "Items",
    "arr",
    "aware",
    "bounded",
    "each",
    "guard",
    "obj",
    "opt_date",
    "opt_float",
    "opt_int",
    "opt_str",
    "parse_partial_date",
    "plausible_year",
    "req_date",
    "req_float",
    "req_int",
    "req_str",
    "when",
    "xml_feed",
]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

MAX_TEXT_CHARS = 8000  # a longer text field (an overview, a description) is cut here
MIN_YEAR, MAX_YEAR = 1800, 2200  # a date outside is a placeholder or a typo, not a fact


class Items(list[T], Generic[T]):
    """The items of a list page that parsed, plus the ones that did not (`skipped`, with their reasons)."""

    def __init__(self, items: Iterable[T] = (), skipped: Iterable[PayloadError] = ()) -> None:
        super().__init__(items)
        self.skipped: list[PayloadError] = list(skipped)


def each(items: list[Any], what: str, parse_one: Callable[[Any], T]) -> Items[T]:
    """Parse every item on its own: whatever one item raises makes it a counted skip, never the page's failure."""
    out: Items[T] = Items()
    for i, x in enumerate(items):
        try:
            out.append(parse_one(x))
        except PayloadError as e:
            out.skipped.append(PayloadError(e.reason, f"{what} #{i}: {e.detail}"))
        except Exception as e:  # noqa: BLE001 - one item's failure, whatever it is, is that item's skip
            out.skipped.append(PayloadError("malformed", f"{what} #{i}: {type(e).__name__}: {str(e)[:200]}"))
    return out


N = TypeVar("N", bound=float | None)


def bounded(value: N, key: str, lo: float, hi: float) -> N:
    """`value` when it lies in [lo, hi] (None passes); otherwise a `PayloadError` naming the field."""
    if value is not None and not lo <= value <= hi:
        raise PayloadError("implausible_value", f"{key}={value:g} is outside [{lo:g}, {hi:g}]")
    return value


def guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a parser: only `PayloadError` escapes it."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except PayloadError:
            raise
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            raise PayloadError("invalid_facts", f"{where}: {err.get('msg')}") from None
        except Exception as e:  # noqa: BLE001 - whatever a parser raises on hostile data is that record's skip
            raise PayloadError("malformed", f"{type(e).__name__}: {str(e)[:200]}") from None

    return wrapper


def obj(x: object, what: str) -> Mapping[str, Any]:
    if not isinstance(x, Mapping):
        raise PayloadError("bad_type", f"{what} is {type(x).__name__}, not an object")
    return x


def arr(m: Mapping[str, Any], key: str, *, required: bool = False) -> list[Any]:
    v = m.get(key)
    if v is None:
        if required:
            raise PayloadError("missing_field", key)
        return []
    if not isinstance(v, list):
        raise PayloadError("bad_type", f"{key} is {type(v).__name__}, not a list")
    return v


def opt_str(m: Mapping[str, Any], key: str) -> str | None:
    v = m.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise PayloadError("bad_type", f"{key} is {type(v).__name__}, not a string")
    s = str(v).strip()
    if len(s) > MAX_TEXT_CHARS:
        s = s[:MAX_TEXT_CHARS].rstrip() + "…"
    return s or None


def req_str(m: Mapping[str, Any], key: str) -> str:
    s = opt_str(m, key)
    if s is None:
        raise PayloadError("missing_field", key)
    return s


def opt_float(m: Mapping[str, Any], key: str) -> float | None:
    v = m.get(key)
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        raise PayloadError("bad_type", f"{key} is a boolean, not a number")
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            raise PayloadError("bad_type", f"{key}={v[:40]!r} is not a number") from None
    else:
        raise PayloadError("bad_type", f"{key} is {type(v).__name__}, not a number")
    if not math.isfinite(f):
        raise PayloadError("bad_type", f"{key} is not finite")
    return f


def req_float(m: Mapping[str, Any], key: str) -> float:
    f = opt_float(m, key)
    if f is None:
        raise PayloadError("missing_field", key)
    return f


def opt_int(m: Mapping[str, Any], key: str) -> int | None:
    f = opt_float(m, key)
    if f is None:
        return None
    if f != int(f):
        raise PayloadError("bad_type", f"{key}={f} is not an integer")
    return int(f)


def req_int(m: Mapping[str, Any], key: str) -> int:
    i = opt_int(m, key)
    if i is None:
        raise PayloadError("missing_field", key)
    return i


def opt_date(m: Mapping[str, Any], key: str) -> date | None:
    s = opt_str(m, key)
    if s is None:
        return None
    try:
        d = date.fromisoformat(s[:10])
    except ValueError:
        raise PayloadError("bad_date", f"{key}={s[:40]!r}") from None
    return plausible_year(d, key)


def plausible_year(d: R, key: str) -> R:
    """A date or datetime whose year lies in [MIN_YEAR, MAX_YEAR]; else `PayloadError("bad_date")`."""
    year = getattr(d, "year", 0)
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise PayloadError("bad_date", f"{key}: year {year} is not plausible")
    return d


def req_date(m: Mapping[str, Any], key: str) -> date:
    d = opt_date(m, key)
    if d is None:
        raise PayloadError("missing_field", key)
    return d


def parse_partial_date(s: str, key: str) -> tuple[date, str]:
    """MusicBrainz dates: YYYY, YYYY-MM or YYYY-MM-DD → (first day, precision 'year'|'month'|'day')."""
    parts = s.strip().split("-")
    try:
        if len(parts) == 1:
            return plausible_year(date(int(parts[0]), 1, 1), key), "year"
        if len(parts) == 2:
            return plausible_year(date(int(parts[0]), int(parts[1]), 1), key), "month"
        if len(parts) == 3:
            return plausible_year(date(int(parts[0]), int(parts[1]), int(parts[2])), key), "day"
    except ValueError:
        pass
    raise PayloadError("bad_date", f"{key}={s[:40]!r}")


def aware(d: date | datetime) -> datetime:
    """Midnight UTC of a date, or a datetime made aware (naive = UTC)."""
    if isinstance(d, datetime):
        return d if d.tzinfo else d.replace(tzinfo=UTC)
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def when(s: str, key: str) -> datetime:
    """A date in the formats feeds use (ISO 8601 with `Z`, an offset or none, a bare day; RFC 822), aware UTC."""
    raw = s.strip()
    dt: datetime | None = None
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        try:
            dt = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError, OverflowError):
            dt = None
    if dt is None:
        raise PayloadError("bad_date", f"{key}={raw[:40]!r}")
    return plausible_year((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).astimezone(UTC), key)


def xml_feed(body: bytes) -> ET.Element:
    """An XML feed's root (a client's `decode`): defusedxml refuses entity expansion (billion laughs) and external
    references, since the feed is data; `ValueError` when it does."""
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root: ET.Element = fromstring(body)
    except DefusedXmlException as e:
        raise ValueError(f"the feed is refused: {type(e).__name__}") from None
    return root
