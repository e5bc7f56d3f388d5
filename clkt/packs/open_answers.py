"""A pack's open track (`open_answers.jsonl`, format version 2): the answers carried, checked and scored by the taker.

`clkt evaluate` reads each job's open answers from its outcome (`JobOutcome.open_results`: the GPU queue's own open
pass, `clkt.inject.open_pass`) into `OpenAnswerRow`s, the text only (`pack_rows`). `clkt submit` never reads a
verdict or a figure of the pack's for this track: it takes the snapshot's open questions as frozen here
(`stored_open_key`: the export folder's `open/`, `control/open/` and `locality/open/` files, each matching its
sha256 in the stored manifest), checks that the answers answer every question of the key exactly once per (train
language, variant, split, language) and nothing else (`open_error`), and scores every answer again with its own
normaliser (`rescore`: `clkt.openqa.results.safely_scored_item`, as a job of its own scores them), from which the
open figures are computed (`clkt.packs.open_metrics`) and the board's rows are made (`clkt.report.submitted`).

The key's splits are the job's (`open_asks`): `test` (every test question: a pack's jobs exclude no entity),
`control` (the fictional entities) and `locality` (the questions about entities the pack's target knew,
`manifest.locality.known_by`; none for a target the snapshot does not list).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from clkt.errors import SnapshotError, UserError
from clkt.evaluate.results import Variant
from clkt.openqa.frozen import FrozenOpenQuestion, load_open_questions, locality_open_questions
from clkt.openqa.results import OpenResultItem, safely_scored_item
from clkt.packs._export import check_export_file
from clkt.packs.format import OPEN_FILE, OpenAnswerRow
from clkt.packs.pack import open_key
from clkt.snapshots.layout import SnapshotManifest
from clkt.snapshots.open import has_open, open_path

__all__ = [
    "SPLITS",
    "OpenKey",
    "ScoredOpenAnswer",
    "decode_scored",
    "encode_scored",
    "evaluated_open",
    "open_error",
    "pack_rows",
    "rescore",
    "snapshot_open_key",
    "stored_open_key",
]

SPLITS = ("test", "control", "locality")
_VARIANTS = ("base", "injected")


class ScoredOpenAnswer(OpenResultItem):
    """An open answer of a pack as scored here: the normaliser's item, with the train language of its job."""

    train_lang: str


@dataclass(frozen=True, kw_only=True)
class OpenKey:
    """The snapshot's open questions a pack's jobs answer, per split, by public qid."""

    splits: dict[str, dict[int, FrozenOpenQuestion]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not any(self.splits.values())


def _key(root: Path, target: str) -> OpenKey:
    return OpenKey(splits={
        "test": {q.qid: q for q in load_open_questions(root) if q.split == "test"},
        "control": {q.qid: q for q in load_open_questions(root, control=True)},
        "locality": {q.qid: q for q in locality_open_questions(root, target)},
    })


def snapshot_open_key(root: Path, target: str) -> OpenKey:
    """The open questions of the snapshot folder at `root` that a job of `target` answers (empty: no open track)."""
    return _key(root, target)


def stored_open_key(manifest: SnapshotManifest, export_path: str | None, *, target: str, shown: str) -> OpenKey:
    """The open questions of this store's snapshot (`manifest`, as stored) from its export folder, each file checked
    against the stored manifest's sha256 first; `UserError` naming the pack (`shown`) when the snapshot has no open
    track here or its files are not on this machine as frozen."""
    sid = manifest.snapshot_id
    if not has_open(manifest):
        raise UserError(f"pack {shown}: it holds {OPEN_FILE}, and snapshot {sid} has no open track here")
    root = Path(export_path or "")
    for control, locality in ((False, False), (True, False), (False, True)):
        if not has_open(manifest, control=control, locality=locality):
            continue
        for lang in manifest.languages:
            check_export_file(manifest, export_path, open_path(root, lang, control=control, locality=locality),
                              part="open track", pack_file=OPEN_FILE, shown=shown)
    try:
        return _key(root, target)
    except SnapshotError as e:
        raise UserError(f"pack {shown}: snapshot {sid}'s open track cannot be read here ({e})") from e


def pack_rows(outcomes: Iterable[tuple[str, Sequence[OpenResultItem]]], key: OpenKey) -> list[OpenAnswerRow]:
    """Each (train language, its job's open results) as the pack's rows: the answers to the key's questions, text
    only (the job's verdicts are not carried)."""
    out: list[OpenAnswerRow] = []
    for train, items in outcomes:
        for i in items:
            if i.qid in key.splits.get(i.split, {}):
                out.append(OpenAnswerRow(train_lang=train, variant=i.variant.value, split=i.split, lang=i.lang, qid=i.qid,
                                         entity_id=i.entity_id, answer=i.answer))
    return out


def evaluated_open(
    root: Path, target: str, outcomes: Sequence[tuple[str, Sequence[OpenResultItem]]], *, train_langs: Sequence[str],
    snapshot_id: str,
) -> tuple[list[OpenAnswerRow], list[ScoredOpenAnswer]]:
    """`clkt evaluate`'s open track: the jobs' open answers (`outcomes`: train language, its job's open results) as
    the pack's rows, checked as the taker checks them and scored as it scores them (its metrics.json's claim);
    ([], []) when no job asked an open question (no open track, or `[gpu] open_answers` off)."""
    if not any(items for _, items in outcomes):
        return [], []
    key = snapshot_open_key(root, target)
    rows = pack_rows(outcomes, key)
    error = open_error(rows, key, train_langs=train_langs, snapshot_id=snapshot_id)
    if error:
        raise UserError(f"the jobs' open answers do not make a pack's: {error}")
    return rows, rescore(rows, key)


def _row_error(r: OpenAnswerRow, key: OpenKey, *, train_langs: Sequence[str], snapshot_id: str) -> str | None:
    q = key.splits.get(r.split, {}).get(r.qid)
    if q is None:
        return f"open question {r.qid} is not in snapshot {snapshot_id}'s {r.split} split"
    if r.lang not in q.question.golds:
        return f"open question {r.qid} is answered in language {r.lang!r}, which it is not asked in"
    if r.train_lang not in train_langs:
        return f"open question {r.qid} is answered by train language {r.train_lang!r}, not one of the pack's {list(train_langs)}"
    if r.entity_id != q.entity_id:
        return f"open question {r.qid} is about entity {q.entity_id}, the answer names entity {r.entity_id}"
    return None


def open_error(rows: Sequence[OpenAnswerRow], key: OpenKey, *, train_langs: Sequence[str], snapshot_id: str) -> str | None:
    """Why `rows` do not answer every question of `key` exactly once per (train language, variant, split, language
    it is asked in), and nothing else; None when they do."""
    seen: set[tuple[str, str, str, str, int]] = set()
    for r in rows:
        error = _row_error(r, key, train_langs=train_langs, snapshot_id=snapshot_id)
        if error:
            return f"{OPEN_FILE}: {error}"
        k = open_key(r)
        if k in seen:
            return f"{OPEN_FILE}: open question {r.qid} is answered twice ({r.train_lang}, {r.variant}, {r.split}, {r.lang})"
        seen.add(k)
    missing = [(t, v, split, lang, qid) for t in train_langs for v in _VARIANTS for split in SPLITS
               for qid, q in sorted(key.splits.get(split, {}).items()) for lang in q.question.golds
               if (t, v, split, lang, qid) not in seen]
    if missing:
        t, v, split, lang, qid = missing[0]
        return (f"{OPEN_FILE}: open question {qid} ({split}) is not answered ({t}, {v}, {lang}); "
                f"{len(missing)} answers are missing in all")
    return None


def rescore(rows: Sequence[OpenAnswerRow], key: OpenKey) -> list[ScoredOpenAnswer]:
    """Every answer scored here by the normaliser layer (`rows` checked by `open_error` first); an answer whose
    scoring raises is `UNSCORABLE`, in no figure."""
    out: list[ScoredOpenAnswer] = []
    for r in rows:
        q = key.splits[r.split][r.qid]
        item = safely_scored_item(q.question, qid=r.qid, entity_id=q.entity_id, lang=r.lang, answer=r.answer,
                                  variant=Variant(r.variant), split=r.split, domain=q.domain)
        out.append(ScoredOpenAnswer(train_lang=r.train_lang, **item.model_dump()))
    return out


def encode_scored(items: Sequence[ScoredOpenAnswer]) -> bytes:
    """The scored answers as the store keeps them with the pack: JSON lines, gzip'd (b"": none)."""
    if not items:
        return b""
    return gzip.compress("".join(i.model_dump_json() + "\n" for i in items).encode(), mtime=0)


def decode_scored(blob: bytes | None) -> list[ScoredOpenAnswer]:
    """`encode_scored`'s answers back ([] for none; `ValueError` for bytes it did not write)."""
    if not blob:
        return []
    try:
        return [ScoredOpenAnswer.model_validate_json(line) for line in gzip.decompress(blob).splitlines() if line.strip()]
    except (OSError, ValidationError) as e:
        raise ValueError(f"stored open answers are not readable ({e})") from e
