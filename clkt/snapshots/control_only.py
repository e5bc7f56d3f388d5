"""A snapshot folder that holds only a control split: fictional entities, no real entity, no store.

The positive control of injection on its own (`bench/validity.py`): it loads and runs like any other
snapshot, written by the same export code (`clkt.snapshots.export`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

from clkt.errors import SnapshotError
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.control import attach_control, control_info
from clkt.snapshots.export import StagedDir, write_tree
from clkt.snapshots.layout import AgentInfo, DomainCounts, SnapshotManifest

__all__ = ["write_control_snapshot"]


def write_control_snapshot(
    root: Path, *, spec: str, period: str, seed: int, start: date, end: date, languages: Sequence[str],
    domains: Sequence[str], per_domain: int, built_at: str = "1970-01-01T00:00:00+00:00",
) -> Path:
    """A snapshot folder that holds only a control split (no real entity, no store): the positive control of
    injection on its own (`bench/validity.py`). It loads and runs like any other snapshot."""
    if per_domain < 1:
        raise SnapshotError("a control-only snapshot needs at least one control entity per domain")
    empty = SnapshotContent(
        spec=spec, period=period, seed=seed, revision=0, languages=tuple(languages), items=(), docs=(), questions=(),
        producers=(), prompt_versions={}, redated_entities=0,
    )
    content = attach_control(empty, start=start, end=end, domains=domains, per_domain=per_domain)
    manifest = SnapshotManifest(
        snapshot_id=content.snapshot_id, spec=spec, period=period, period_start=start.isoformat(),
        period_end=end.isoformat(), cadence="monthly", seed=seed, val_ratio=0.2, content_sha256=content.content_sha256,
        languages=list(languages), domains=list(domains), targets=[], agents=AgentInfo(backend="template"),
        counts={"total": DomainCounts()}, notes=["control split only: fictional entities, no real entity"],
        control=control_info(content, domains=domains, per_domain=per_domain),
    )
    with StagedDir(Path(root)) as staged:
        write_tree(content, manifest, staged.tmp, built_at=built_at, clkt_version="bench")
        staged.publish()
        staged.commit()
    return Path(root)
