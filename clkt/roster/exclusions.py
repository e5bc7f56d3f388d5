"""A target's exclusions on a snapshot as the snapshot's files name them: public entity ids.

The store records exclusions by its own entity rows (`storage.targets.excluded_entities`); a GPU job reads the
snapshot's files, which carry public ids (`clkt.snapshots.ids`). The snapshot's items map one to the other.
"""

from __future__ import annotations

from clkt.snapshots.content import load_item_refs
from storage.engine import Session
from storage.targets import excluded_entities

__all__ = ["excluded_public_ids"]


async def excluded_public_ids(session: Session, snapshot_id: str, target: str) -> list[int]:
    """The public entity ids of the snapshot's entities `target` is excluded from (ascending; [] for none).
    `SnapshotError` when the snapshot's items reference rows that are gone."""
    rows = await excluded_entities(session, snapshot_id, target)
    if not rows:
        return []
    return sorted({it.entity_id for it in await load_item_refs(session, snapshot_id) if it.entity_row in rows})
