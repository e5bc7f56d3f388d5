"""Small typed accessors for parsing API payloads: every failure is a `PayloadError` naming the field.

APIs drift: numbers arrive as strings (TheSportsDB always does), fields go missing or turn null. These
helpers accept the tolerable variants (a numeric string for a number) and reject the rest clearly.
`guard()` turns any other exception a parser might still raise into a `PayloadError`, so nothing but a
`PayloadError` ever leaves a parser.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from datetime import date, datetime, timezone
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from clkt.errors import PayloadError

__all__ = [
    "guard", "obj", "arr", "req_str", "opt_str", "req_int", "opt_int", "req_float", "opt_float", "req_date",
    "opt_date", "parse_partial_date", "aware",
]

P = ParamSpec("P")
R = TypeVar("R")


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
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as e:
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
        return date.fromisoformat(s[:10])
    except ValueError:
        raise PayloadError("bad_date", f"{key}={s[:40]!r}") from None


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
            return date(int(parts[0]), 1, 1), "year"
        if len(parts) == 2:
            return date(int(parts[0]), int(parts[1]), 1), "month"
        if len(parts) == 3:
            return date(int(parts[0]), int(parts[1]), int(parts[2])), "day"
    except ValueError:
        pass
    raise PayloadError("bad_date", f"{key}={s[:40]!r}")


def aware(d: date | datetime) -> datetime:
    """Midnight UTC of a date, or a datetime made aware (naive = UTC)."""
    if isinstance(d, datetime):
        return d if d.tzinfo else d.replace(tzinfo=timezone.utc)
    return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
