"""What every domain folder's generated payloads share: ids drawn for a payload (`_ids`: a film's people, an album's
tracks) come from the entity's own seed, so the same entity is always the same payload. The payloads themselves are
each domain's (`clkt/domains/<name>/replay.py`).
"""

from __future__ import annotations

from clkt.replay.stream import Generated

__all__: list[str] = []


def _ids(g: Generated, purpose: str, n: int, lo: int = 10_000, hi: int = 9_999_999) -> list[int]:
    r = g.rng(purpose)
    return [r.randint(lo, hi) for _ in range(n)]
