"""The keys and the stored form of the leaderboard's figures kept in the store (`storage.figure_cache`; issue 45 item 3).

Two things are kept, each under the sha256 of its content and of the code that computes it (`code_digest`: every
module of `clkt.report` and the storage modules that read packs, so a change to how a figure is computed makes new
keys and the old entries are never read):

- **scored**: a submitted pack's answers scored against this store's answer key of its snapshot, as result packs
  per train language (`storage.result_packs`), by (the answers' sha256, the key's digest, the scorer asked for); written at
  intake (`clkt.packs.intake`) or by the first board that reads the pack;
- **row**: a leaderboard row's figures (`LeaderRow`, before ranking), by its `clkt.report.row_cache.row_key`.

So a board in a fresh process reads what an earlier process computed instead of parsing every pack and drawing
every bootstrap again. A payload that does not decode is treated as absent (computed again), never trusted.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from pathlib import Path

from pydantic import ValidationError

import clkt
from clkt.report.leaderboard_data import LeaderRow
from storage.result_packs import ResultPackRecord

__all__ = [
    "ROW",
    "SCORED",
    "ScoredPacks",
    "code_digest",
    "decode_row",
    "decode_scored",
    "encode_row",
    "encode_scored",
    "row_store_key",
    "scored_key",
]

SCORED, ROW = "scored", "row"  # `storage.figure_cache.FigureCacheEntry.kind`
ScoredPacks = dict[str, list[ResultPackRecord]]  # train language -> its result packs (job id 0: set when read)
_STORAGE_MODULES = ("leaderboard.py", "result_packs.py", "submissions.py")


@cache
def code_digest() -> str:
    """The sha256 of the code that computes the kept figures: clkt's version and the source of every `clkt.report`
    module and of the storage modules that read packs."""
    report = Path(__file__).resolve().parent
    storage = report.parents[1] / "storage"
    h = hashlib.sha256(clkt.__version__.encode())
    for path in sorted(report.rglob("*.py")) + [storage / name for name in _STORAGE_MODULES]:
        h.update(path.relative_to(report.parents[1]).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _key(kind: str, *parts: str) -> str:
    return hashlib.sha256(json.dumps([kind, code_digest(), *parts]).encode()).hexdigest()


def scored_key(answers_sha256: str, key_digest: str, scorer: str | None) -> str:
    """The key of a submitted pack's answers (the sha256 of their stored bytes) scored against a snapshot's answer
    key (`key_digest`) for `scorer` (None: every scorer)."""
    return _key(SCORED, answers_sha256, key_digest, scorer or "*")


def row_store_key(row_key: str) -> str:
    """The stored key of the row whose content key is `row_key`."""
    return _key(ROW, row_key)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def encode_scored(scored: ScoredPacks) -> bytes:
    return json.dumps([[train, p.scorer, list(p.langs), _b64(p.question_ids), _b64(p.entity_ids), _b64(p.flags)]
                       for train, packs in sorted(scored.items()) for p in packs]).encode()


def decode_scored(payload: bytes) -> ScoredPacks | None:
    """The scored packs of `payload`; None when it does not decode (then they are computed again)."""
    out: ScoredPacks = {}
    try:
        for train, scorer, langs, qids, ents, flags in json.loads(payload):
            q, e, f = (base64.b64decode(x, validate=True) for x in (qids, ents, flags))
            if not (len(q) == len(e) == len(f) and len(q) % 8 == 0):
                return None
            out.setdefault(str(train), []).append(ResultPackRecord(
                job_id=0, scorer=str(scorer), langs=tuple(str(x) for x in langs), question_ids=q, entity_ids=e, flags=f))
    except (ValueError, TypeError):
        return None
    return out


def encode_row(row: LeaderRow | None) -> bytes:
    return b"null" if row is None else row.model_dump_json().encode()


def decode_row(payload: bytes) -> tuple[bool, LeaderRow | None]:
    """(whether `payload` decoded, the row or None for a group without answers)."""
    if payload == b"null":
        return True, None
    try:
        return True, LeaderRow.model_validate_json(payload)
    except ValidationError:
        return False, None
