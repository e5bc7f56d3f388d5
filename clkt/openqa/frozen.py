"""The open track's questions as a frozen snapshot holds them: typed, checked, read from its folder.

`load_open_questions(path)` reads `open/<lang>.jsonl` (or, with `control=True`, `control/open/<lang>.jsonl`) of a
snapshot folder (`clkt.snapshots.open` writes them when it freezes; with `locality=True`, the locality split's
`locality/open/<lang>.jsonl`, and `locality_open_questions` those a target knew) and gives one `FrozenOpenQuestion` per qid:
its public ids, domain and split beside the `ShortAnswerQuestion` (every language's text, gold and aliases),
which is validated again here, so a file edited into an empty gold is refused as at generation. The files' sha256
are checked against the manifest first (`verify_hashes`). A snapshot frozen before the track existed
(`manifest.open` absent), or without open locality questions, has none: the result is empty. A file that is missing, not UTF-8, not JSON, not an
`OpenRow`, or whose languages disagree raises `SnapshotError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from clkt.errors import SnapshotError
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.snapshots.layout import MANIFEST_FILE, OpenRow, SnapshotManifest, sha256_file
from clkt.snapshots.open import has_open, open_path, read_open

__all__ = ["FrozenOpenQuestion", "load_open_questions", "locality_open_questions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FrozenOpenQuestion:
    qid: int  # public (`clkt.snapshots.ids.stable_open_qid`)
    entity_id: int  # public
    domain: str
    source: str
    split: str
    question: ShortAnswerQuestion  # its `qid` is the public qid as text


def _manifest(root: Path) -> SnapshotManifest:
    mpath = root / MANIFEST_FILE
    if not mpath.is_file():
        raise SnapshotError(f"{root} is not a snapshot directory (no {MANIFEST_FILE})")
    try:
        return SnapshotManifest.model_validate_json(mpath.read_bytes())
    except ValidationError as e:
        raise SnapshotError(f"{mpath}: invalid manifest: {e.errors()[0]['msg']}") from e


def _verify(root: Path, manifest: SnapshotManifest, *, control: bool, locality: bool) -> None:
    for lang in manifest.languages:
        rel = open_path(root, lang, control=control, locality=locality).relative_to(root).as_posix()
        digest = manifest.files.get(rel)
        if digest is None:
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: open-track file {rel} is not listed in the manifest")
        if (root / rel).is_file() and sha256_file(root / rel) != digest:
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: {rel} does not match its sha256 in the manifest")


def _question(snapshot_id: str, rows: list[OpenRow]) -> FrozenOpenQuestion:
    first = rows[0]
    try:
        q = ShortAnswerQuestion(
            qid=str(first.qid), entity=str(first.entity_id), fact=first.fact, kind=AnswerKind(first.kind),
            questions={r.lang: r.question for r in rows},
            golds={r.lang: LangGold(answer=r.answer, aliases=tuple(r.aliases)) for r in rows},
        )
    except ValueError as e:  # pydantic's ValidationError, or an unknown kind
        raise SnapshotError(f"snapshot {snapshot_id}: open question {first.qid} ({first.fact}) cannot be scored: "
                            f"{str(e).splitlines()[-1].strip()}") from e
    return FrozenOpenQuestion(qid=first.qid, entity_id=first.entity_id, domain=first.domain, source=first.source,
                              split=first.split, question=q)


def load_open_questions(
    path: Path | str, *, control: bool = False, locality: bool = False, verify_hashes: bool = True,
) -> list[FrozenOpenQuestion]:
    """The snapshot folder's open questions (the control split's with `control`, the locality split's with
    `locality`), by qid; [] without them."""
    root = Path(path)
    manifest = _manifest(root)
    if not has_open(manifest, control=control, locality=locality):
        return []
    if verify_hashes:
        _verify(root, manifest, control=control, locality=locality)
    by_qid: dict[int, list[OpenRow]] = {}
    for rows in read_open(root, manifest, control=control, locality=locality).values():
        for r in rows:
            by_qid.setdefault(r.qid, []).append(r)
    return [_question(manifest.snapshot_id, rows) for _, rows in sorted(by_qid.items())]


def locality_open_questions(path: Path | str, target: str, *, verify_hashes: bool = True) -> list[FrozenOpenQuestion]:
    """The locality split's open questions about the entities `target` knew (`manifest.locality.known_by`); [] for a
    target it does not list, or a snapshot without open locality questions."""
    root = Path(path)
    info = _manifest(root).locality
    known = set(info.known_by.get(target, [])) if info is not None else set()
    if not known:
        return []
    return [q for q in load_open_questions(root, locality=True, verify_hashes=verify_hashes) if q.entity_id in known]
