"""The locality split of a snapshot: questions about entities a target already knew, to measure what an
injection keeps of what the model knew before ("kept %", `clkt.report.locality`).

`locality/questions/<lang>.jsonl` holds `QuestionRow`s (split `test`, the same qids in every language, none
shared with the real or the control questions) and the manifest's `locality` (`LocalityInfo`) says which target
knew which entity (`known_by`): a GPU job answers only its target's entities, with the base and the injected
model, and keeps the paired counts in its summary. There are no documents: these entities are never trained on,
never in the real question files or the reference / hf / lm_eval exports, never scored as transfer.

`write_locality` writes the files into a snapshot folder being built (before its manifest hashes them) and
returns what the manifest records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from clkt.errors import SnapshotError
from clkt.snapshots.layout import LOCALITY_DIR, LocalityInfo, QuestionRow, dumps_row

__all__ = ["LOCALITY_DIR", "locality_path", "write_locality"]


def locality_path(root: Path, lang: str) -> Path:
    return root / LOCALITY_DIR / "questions" / f"{lang}.jsonl"


def write_locality(
    root: Path, questions: Mapping[str, Sequence[QuestionRow]], *, known_by: Mapping[str, Sequence[int]],
) -> tuple[list[str], LocalityInfo | None]:
    """Write `locality/questions/<lang>.jsonl` (rows sorted by qid) for every language of `questions`; return the
    files' relative paths and the manifest's `LocalityInfo` (None, and no file, when there is no question).
    Every language must hold the same qids; every entity must be known by a target of `known_by`."""
    langs = sorted(questions)
    if not langs or not any(questions.values()):
        return [], None
    ref = sorted(r.qid for r in questions[langs[0]])
    for lang in langs:
        if sorted(r.qid for r in questions[lang]) != ref:
            raise SnapshotError(f"locality split: {lang} does not hold the same questions as {langs[0]}")
    entities = {r.entity_id for r in questions[langs[0]]}
    known = {e for es in known_by.values() for e in es}
    if entities - known:
        raise SnapshotError(f"locality split: {len(entities - known)} entity(ies) known by no target in known_by")
    files: list[str] = []
    for lang in langs:
        path = locality_path(root, lang)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(questions[lang], key=lambda r: r.qid)
        path.write_text("".join(dumps_row(r.model_copy(update={"split": "test"})) + "\n" for r in rows), encoding="utf-8")
        files.append(path.relative_to(root).as_posix())
    info = LocalityInfo(
        entities=len(entities), questions=len(ref),
        known_by={t: sorted(set(es) & entities) for t, es in sorted(known_by.items()) if set(es) & entities},
    )
    return files, info
