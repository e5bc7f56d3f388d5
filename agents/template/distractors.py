"""Domain-aware distractor candidates and the safety filter that picks three of them.

Candidate generators are pure functions of (value, rng); `choose()` keeps a candidate only if, in EVERY
document language, it reads differently from the answer, from the other picks and from every true value of
the slot, and is not a substring of the slot's evidence sentence (so "39 minutes" never sits inside
"139 minutes"). Numeric candidates must also be absent from the whole document.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from random import Random
from typing import Literal

from agents.template.values import (
    CoordValue,
    DateValue,
    FloatUnit,
    FloatValue,
    IntUnit,
    IntValue,
    NameValue,
    ScoreValue,
    Value,
)
from clkt.documents.formatting import LANGUAGES, formatter
from clkt.facts import RenderedDocument
from clkt.outputs import normalize

__all__ = [
    "appears_as_token",
    "choose",
    "near_coordinates",
    "near_floats",
    "near_ints",
    "near_scores",
    "pool_names",
    "seeded_rng",
    "shifted_dates",
    "spread_floats",
]

_DATE_SHIFTS = (1, 2, 3, 4, 5, 6, 7, 10, 14, 21, 30, 31, 61, 92, 365)


def seeded_rng(key: str, slot: str) -> Random:
    """A generator seeded from a hash of (entity facts JSON, slot): reruns give identical distractors."""
    digest = hashlib.sha256(f"{slot}\x00{key}".encode()).digest()
    return Random(int.from_bytes(digest[:8], "big"))


def _round_like(n: int, ref: int) -> int:
    """Round `n` to as many trailing zeros as `ref` has (63,000,000 -> distractors like 71,000,000)."""
    zeros = len(str(abs(ref))) - len(str(abs(ref)).rstrip("0")) if ref else 0
    q = 10 ** min(zeros, max(len(str(abs(n))) - 2, 0))
    return int(round(n / q) * q) if q > 1 else n


def near_ints(n: int, rng: Random, *, minimum: int = 0, unit: IntUnit = "count") -> list[IntValue]:
    """Plausible nearby integers: +-1..5 for small counts, +-4%..35% (rounded alike) for large ones."""
    out: list[int] = []
    if abs(n) < 30:
        steps = [1, 2, 3, 4, 5, 6, 8, 10]
        rng.shuffle(steps)
        for s in steps:
            out.extend((n + s, n - s) if rng.random() < 0.5 else (n - s, n + s))
    else:
        pct = [0.04, 0.07, 0.1, 0.13, 0.17, 0.22, 0.28, 0.35]
        rng.shuffle(pct)
        for p in pct:
            for sign in (1, -1) if rng.random() < 0.5 else (-1, 1):
                out.append(_round_like(round(n * (1 + sign * p)), n))
    return [IntValue(v, unit) for v in dict.fromkeys(out) if v >= minimum]


def near_floats(x: float, rng: Random, *, steps: Sequence[float], unit: FloatUnit, minimum: float) -> list[FloatValue]:
    cand: list[float] = []
    shuffled = list(steps)
    rng.shuffle(shuffled)
    for s in shuffled:
        for sign in (1, -1) if rng.random() < 0.5 else (-1, 1):
            v = round(x + sign * s, 1)
            if v >= minimum:
                cand.append(v)
    return [FloatValue(v, unit) for v in dict.fromkeys(cand)]


def spread_floats(
    x: float, rng: Random, *, steps: Sequence[float], unit: FloatUnit, minimum: float, maximum: float
) -> list[FloatValue]:
    """Like `near_floats` within [minimum, maximum], but each step goes one way first (a random direction), the
    other ways only after every step was used: the first picks never mirror each other around the answer
    (with near_floats the answer is the midpoint of the first two distractors)."""
    shuffled = list(steps)
    rng.shuffle(shuffled)
    signs = [rng.choice((1, -1)) for _ in shuffled]
    firsts = [round(x + sg * s, 1) for s, sg in zip(shuffled, signs, strict=True)]
    seconds = [round(x - sg * s, 1) for s, sg in zip(shuffled, signs, strict=True)]
    cand = [v for v in (*firsts, *seconds) if minimum <= v <= maximum]
    return [FloatValue(v, unit) for v in dict.fromkeys(cand)]


_COORD_SHIFT_DEG = (0.2, 3.0)  # how far (degrees) a coordinate distractor lies from the true value
_COORD_DRAWS = 16


def near_coordinates(
    x: float, rng: Random, *, axis: Literal["lat", "lon"] = "lat", avoid: Iterable[float] = ()
) -> list[CoordValue]:
    """Coordinates 0.2°-3° from `x`, with 3 decimals like the document, in `x`'s hemisphere (so the hemisphere
    word never gives the answer away) and within ±90° (latitude) or ±180° (longitude).

    Each draw has its own distance and direction (no two options mirror each other around the answer). A draw
    past the pole goes the other way; one across the equator lands between the equator and `x` instead (so
    near the equator the answer is not always the option closest to it). A candidate whose digits equal one
    of `avoid` (the document's other coordinate) is left out: it would be in the document."""
    limit = 90.0 if axis == "lat" else 180.0
    positive = x >= 0  # the formatter's hemisphere rule: 0 and -0.0 are north / east
    banned = {round(abs(a), 3) for a in avoid}
    lo, hi = _COORD_SHIFT_DEG
    cand: list[float] = []
    for _ in range(_COORD_DRAWS):
        sign, d = rng.choice((1, -1)), rng.uniform(lo, hi)
        v = x + sign * d
        if abs(v) > limit:
            v = x - sign * d
        elif (v >= 0) != positive:
            inside = x * rng.uniform(0.1, 0.9)
            v = inside if round(inside, 3) != 0 else x - sign * d
        v = round(v, 3)
        if (v >= 0) != positive or abs(v) > limit or round(abs(v), 3) in banned:
            continue
        cand.append(v)
    return [CoordValue(v, axis) for v in dict.fromkeys(cand)]


def shifted_dates(d: date, rng: Random) -> list[DateValue]:
    shifts = list(_DATE_SHIFTS)
    rng.shuffle(shifts)
    out: list[DateValue] = []
    for s in shifts:
        sign = 1 if rng.random() < 0.5 else -1
        try:
            out.append(DateValue(d + timedelta(days=sign * s)))
            out.append(DateValue(d - timedelta(days=sign * s)))
        except OverflowError:
            continue
    return out


def near_scores(home: int, away: int, rng: Random) -> list[ScoreValue]:
    """Nearby final scores, never the real one nor its reversal."""
    deltas = [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, -1), (2, 0), (0, 2), (1, -1), (-1, 1), (2, 1), (1, 2)]
    rng.shuffle(deltas)
    out: list[ScoreValue] = []
    for dh, da in deltas:
        h, a = home + dh, away + da
        if h < 0 or a < 0 or {(h, a), (a, h)} & {(home, away)}:
            continue
        out.append(ScoreValue(h, a))
    return out


def pool_names(pool: Iterable[str], rng: Random, *, exclude: Iterable[str] = ()) -> list[NameValue]:
    """Shuffled pool entries, minus any that equals or contains (or is contained in) an excluded name."""
    banned = [normalize(x) for x in exclude if x and x.strip()]
    names = [p for p in dict.fromkeys(pool) if not any(_overlaps(normalize(p), b) for b in banned)]
    rng.shuffle(names)
    return [NameValue(n) for n in names]


def _overlaps(a: str, b: str) -> bool:
    return a == b or (len(b) >= 4 and b in a) or (len(a) >= 4 and a in b)


def appears_as_token(needle: str, haystack: str) -> bool:
    """`needle` occurs in `haystack` not glued to other digits or letters (normalized)."""
    n, h = normalize(needle), normalize(haystack)
    if not n:
        return False
    return re.search(rf"(?<![\w.,]){re.escape(n)}(?![\w]|[.,]\d)", h) is not None


def choose(
    *,
    answer: Value,
    truths: Sequence[Value],
    candidates: Iterable[Value],
    documents: dict[str, RenderedDocument],
    slot: str,
    k: int = 3,
) -> list[Value] | None:
    """The first `k` safe distractors (see module doc), or None when there are not enough."""
    picked: list[Value] = []
    numeric = not isinstance(answer, NameValue)
    for cand in candidates:
        if _safe(cand, answer, truths, picked, documents, slot, numeric):
            picked.append(cand)
            if len(picked) == k:
                return picked
    return None


def _safe(
    cand: Value,
    answer: Value,
    truths: Sequence[Value],
    picked: Sequence[Value],
    documents: dict[str, RenderedDocument],
    slot: str,
    numeric: bool,
) -> bool:
    if type(cand) is not type(answer):
        return False
    for lang in LANGUAGES:
        fmt = formatter(lang)
        text = normalize(cand.render(fmt))
        if not text:
            return False
        if any(text == normalize(v.render(fmt)) for v in (answer, *truths, *picked)):
            return False
        doc = documents.get(lang)
        if doc is None:
            continue
        evidence = doc.sentences.get(slot, "")
        if text in normalize(evidence):
            return False
        if numeric and appears_as_token(text, doc.text):
            return False
    return True
