"""`clkt snapshot list` (a table, or `--json`: one object per line) and `clkt snapshot latest` (the latest frozen
snapshot's id, for a script: `clkt report "$(clkt snapshot latest)"`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict
from rich.table import Table

from clkt.cli.common import ConfigOption, fail, load_cli_settings, plural, print_table, read_store, run_async

if TYPE_CHECKING:
    from clkt.snapshots.layout import DomainCounts

__all__ = ["SnapshotListing", "latest", "list_snapshots_command"]

SpecOption = Annotated[str | None, typer.Option("--spec", help="only this spec's snapshots")]
JsonOption = Annotated[bool, typer.Option("--json", help="JSON: one object per snapshot, one per line")]


class SnapshotListing(BaseModel):
    """One snapshot as `clkt snapshot list --json` prints it."""

    model_config = ConfigDict(frozen=True)

    id: str
    spec: str
    period: str
    status: str  # building, frozen, failed, superseded
    partial: bool
    entities: int | None  # None: not frozen (or a manifest that does not validate)
    questions: int | None
    built_at: datetime
    superseded_by: str | None


def _listed_total(stored: Mapping[str, Any]) -> DomainCounts | None:
    """The total counts of a listed snapshot (None: not frozen, or a manifest that does not validate: the
    listing still shows the row)."""
    from pydantic import ValidationError

    from clkt.snapshots.stored import stored_manifest

    try:
        m = stored_manifest(stored)
    except ValidationError:
        return None
    return None if m is None else m.counts.get("total")


def _listings(config: ConfigOption, spec: str | None) -> list[SnapshotListing]:
    """The store's snapshots, newest period first, then newest build first."""
    from storage.snapshots import list_snapshots

    settings = load_cli_settings(config)

    async def read_listing() -> list[Any]:
        async with read_store(settings) as store, store.session() as s:
            return await list_snapshots(s, spec=spec)

    out = []
    for r in run_async(read_listing):
        total = _listed_total(r.manifest)
        out.append(SnapshotListing(
            id=r.id, spec=r.spec, period=r.period, status=r.status.value, partial=r.partial,
            entities=None if total is None else total.entities, questions=None if total is None else total.fact_qas,
            built_at=r.built_at, superseded_by=r.superseded_by,
        ))
    return out


def list_snapshots_command(config: ConfigOption = None, spec: SpecOption = None, as_json: JsonOption = False) -> None:
    rows = _listings(config, spec)
    if as_json:
        for r in rows:
            print(r.model_dump_json())
        return
    t = Table(title=plural(len(rows), "snapshot", "snapshots"))
    t.add_column("id", no_wrap=True)
    for col in ("spec", "period", "status", "entities", "questions", "built (UTC)"):
        t.add_column(col)
    for r in rows:
        t.add_row(r.id, r.spec, r.period, r.status + (" (partial)" if r.partial else ""),
                  "" if r.entities is None else str(r.entities), "" if r.questions is None else str(r.questions),
                  r.built_at.strftime("%Y-%m-%d %H:%M"))
    print_table(t)


def latest(config: ConfigOption = None, spec: Annotated[str | None, typer.Option(
        "--spec", help="the spec (default: the configured one)")] = None, as_json: Annotated[bool, typer.Option(
        "--json", help="the snapshot as `clkt snapshot list --json` prints it")] = False) -> None:
    name = spec or load_cli_settings(config).spec.name
    frozen = [r for r in _listings(config, name) if r.status == "frozen"]
    if not frozen:
        raise fail(f"no frozen snapshot of spec {name!r} in this store (see `clkt snapshot list`)", 1)
    print(frozen[0].model_dump_json() if as_json else frozen[0].id)
