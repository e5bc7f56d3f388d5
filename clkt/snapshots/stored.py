"""Snapshots as stored: read one back, compare two, map its public qids to this store's question rows.

`stored_manifest` is how clkt reads the manifest the store keeps as JSON: a typed `SnapshotManifest`.

`load_snapshot` re-assembles a frozen snapshot from the rows its items reference (its control split
regenerated from the seed, its open track from the facts, or read back from
its exported folder when the LLM roles wrote it: `clkt.snapshots.open_llm`) and checks it still hashes to its id; `diff_snapshots` compares two by public ids;
`question_rows_by_qid` maps an export's qids back to question rows (results read from an export). The rows
come from the snapshots' repository (`storage.snapshots`); nothing here builds a query.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from clkt.errors import SnapshotError
from clkt.snapshots.content import SnapshotContent, assemble_content, load_item_refs
from clkt.snapshots.control import attach_control, check_control_engine
from clkt.snapshots.layout import SnapshotManifest
from clkt.snapshots.open import attach_open, check_open_engine
from clkt.snapshots.open_llm import is_llm_open, stored_open
from storage.engine import Session
from storage.snapshots import SnapshotRecord, get_snapshot

__all__ = [
    "LoadedSnapshot", "SnapshotDiff", "diff_snapshots", "load_snapshot", "question_rows_by_qid", "stored_manifest",
]


@dataclass(frozen=True, kw_only=True)
class LoadedSnapshot:
    row: SnapshotRecord  # the stored snapshot
    manifest: SnapshotManifest
    content: SnapshotContent


@dataclass(frozen=True, kw_only=True)
class SnapshotDiff:
    """Public entity ids and qids (as in the exports) added, removed or moved between two snapshots."""

    a: str
    b: str
    entities_added: list[int]
    entities_removed: list[int]
    questions_added: list[int]
    questions_removed: list[int]
    split_changed: list[int]


def stored_manifest(stored: Mapping[str, Any] | None) -> SnapshotManifest | None:
    """The typed manifest of a stored snapshot's JSON (`SnapshotRecord.manifest`, `frozen_manifests`); None
    when it has none (a snapshot not frozen yet). One that does not validate raises pydantic's
    `ValidationError`."""
    return SnapshotManifest.model_validate(stored) if stored else None


async def load_snapshot(session: Session, ident: str) -> LoadedSnapshot:
    """Re-assemble a snapshot from its referenced rows and check it still hashes to its id."""
    row = await get_snapshot(session, ident)
    manifest = stored_manifest(row.manifest)
    if manifest is None:
        raise SnapshotError(f"snapshot {row.id} has no manifest (it was never frozen)")
    items = await load_item_refs(session, row.id)
    content = await assemble_content(
        session, spec=row.spec, period=row.period, seed=manifest.seed, revision=manifest.revision,
        languages=manifest.languages, items=items,
    )
    if manifest.control is not None:
        check_control_engine(manifest.control, row.id)
        content = attach_control(
            content, start=date.fromisoformat(manifest.period_start), end=date.fromisoformat(manifest.period_end),
            domains=manifest.control.domains, per_domain=manifest.control.per_domain,
        )
    if manifest.open is not None and is_llm_open(manifest):  # the LLM roles' open track: read back, never rewritten
        if not row.export_path:
            raise SnapshotError(f"snapshot {row.id}: its open track was written by the LLM roles and is read from its "
                                "exported folder, which the store does not name")
        content = stored_open(content, manifest, Path(row.export_path))
    elif manifest.open is not None:  # the open track, regenerated from the facts (none before it existed)
        check_open_engine(manifest.open, row.id)
        content = attach_open(
            content, start=date.fromisoformat(manifest.period_start), end=date.fromisoformat(manifest.period_end),
            control_domains=manifest.control.domains if manifest.control else [],
            per_domain=manifest.control.per_domain if manifest.control else 0,
            split=manifest.open.val_questions > 0,  # frozen before the validation split: every question in test
        )
    if content.content_sha256 != row.content_sha256:
        raise SnapshotError(
            f"snapshot {row.id}: the rows it references changed since it was frozen "
            f"(content sha256 {content.content_sha256[:12]} != {row.content_sha256[:12]})"
        )
    return LoadedSnapshot(row=row, manifest=manifest, content=content)


async def diff_snapshots(session: Session, a: str, b: str) -> SnapshotDiff:
    ra, rb = await get_snapshot(session, a), await get_snapshot(session, b)
    ia = {it.qid: it for it in await load_item_refs(session, ra.id)}
    ib = {it.qid: it for it in await load_item_refs(session, rb.id)}
    ea = {it.entity_id for it in ia.values()}
    eb = {it.entity_id for it in ib.values()}
    return SnapshotDiff(
        a=ra.id, b=rb.id,
        entities_added=sorted(eb - ea), entities_removed=sorted(ea - eb),
        questions_added=sorted(set(ib) - set(ia)), questions_removed=sorted(set(ia) - set(ib)),
        split_changed=sorted(q for q in set(ia) & set(ib) if ia[q].split != ib[q].split),
    )


async def question_rows_by_qid(session: Session, snapshot_id: str) -> dict[int, int]:
    """Public qid (as in the snapshot's files) -> this store's `Question.id`, for the snapshot's items."""
    return {it.qid: it.question_row for it in await load_item_refs(session, snapshot_id)}
