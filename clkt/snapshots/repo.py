"""Reading snapshots back from the store: list, load (re-assembled from the referenced rows), diff, and the
map from a snapshot's public qids back to this store's question rows (for results read from an export)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from clkt.errors import SnapshotError, UserError
from clkt.snapshots.content import SnapshotContent, assemble_content, load_item_refs
from clkt.snapshots.control import attach_control, check_control_engine
from clkt.snapshots.layout import SnapshotManifest
from storage.models import Snapshot

__all__ = [
    "LoadedSnapshot",
    "SnapshotDiff",
    "list_snapshots",
    "get_snapshot",
    "load_snapshot",
    "diff_snapshots",
    "question_rows_by_qid",
]


@dataclass(frozen=True, kw_only=True)
class LoadedSnapshot:
    row: Snapshot
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


async def list_snapshots(session: AsyncSession, *, spec: str | None = None) -> list[Snapshot]:
    q = select(Snapshot).order_by(Snapshot.period.desc(), Snapshot.built_at.desc())  # type: ignore[attr-defined]
    if spec is not None:
        q = q.where(Snapshot.spec == spec)
    return list((await session.execute(q)).scalars().all())


async def get_snapshot(session: AsyncSession, ident: str) -> Snapshot:
    """By id, or by a unique id prefix; `UserError` naming the choices otherwise."""
    row = await session.get(Snapshot, ident)
    if row is not None:
        return row
    if not ident:
        raise UserError("a snapshot id (or a unique prefix of one) is required")
    # autoescape: `%` and `_` in what the user typed are literal characters, not LIKE wildcards
    rows = (await session.execute(select(Snapshot).where(Snapshot.id.startswith(ident, autoescape=True)))).scalars().all()  # type: ignore[attr-defined]
    if len(rows) == 1:
        return rows[0]
    if not rows:
        raise UserError(f"unknown snapshot {ident!r} (see `clkt snapshot list`)")
    raise UserError(f"snapshot {ident!r} is ambiguous: {', '.join(sorted(r.id for r in rows))}")


async def load_snapshot(session: AsyncSession, ident: str) -> LoadedSnapshot:
    """Re-assemble a snapshot from its referenced rows and check it still hashes to its id."""
    row = await get_snapshot(session, ident)
    if not row.manifest:
        raise SnapshotError(f"snapshot {row.id} has no manifest (it was never frozen)")
    manifest = SnapshotManifest.model_validate(row.manifest)
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
    if content.content_sha256 != row.content_sha256:
        raise SnapshotError(
            f"snapshot {row.id}: the rows it references changed since it was frozen "
            f"(content sha256 {content.content_sha256[:12]} != {row.content_sha256[:12]})"
        )
    return LoadedSnapshot(row=row, manifest=manifest, content=content)


async def diff_snapshots(session: AsyncSession, a: str, b: str) -> SnapshotDiff:
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


async def question_rows_by_qid(session: AsyncSession, snapshot_id: str) -> dict[int, int]:
    """Public qid (as in the snapshot's files) -> this store's `Question.id`, for the snapshot's items."""
    return {it.qid: it.question_row for it in await load_item_refs(session, snapshot_id)}
