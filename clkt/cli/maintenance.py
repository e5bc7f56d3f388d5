"""`clkt gc [--dry-run] [--json]`: free what `[retention]` lets go; `clkt snapshot verify ID`: a frozen snapshot's
files against their hashes and its rows against its content hash."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from clkt.cli.common import ConfigOption, console, load_cli_settings, plain, print_table, read_store, run_async
from clkt.cli.snapshot import IdArg, snapshot_app

if TYPE_CHECKING:
    from clkt.retention import Budget, GcPlan, GcResult

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("gc", help="Free what the retention settings let go (job checkpoints, logs, base caches, old "
                           "reports); says what it frees and what it keeps, and why.")(gc)
    snapshot_app.command("verify", help="Check a frozen snapshot's files against their sha256 and its rows against "
                                        "its content hash (exit 2, naming the file, when they differ).")(verify)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n:,} B"


def _print(plan: GcPlan, result: GcResult | None, budget: Budget, dry_run: bool) -> None:
    freed = plan.freed() if result is None else result.freed()
    title = "would free" if dry_run else "freed"
    t = Table("category", "files", "bytes", title=f"clkt gc: {title}")
    for cat, k in freed.items():
        t.add_row(cat, f"{k.files:,}", _mb(k.bytes))
    t.add_section()
    t.add_row("total", f"{sum(k.files for k in freed.values()):,}", _mb(sum(k.bytes for k in freed.values())))
    print_table(t)
    for kept, where in ((plan.kept, ""), (plan.kept_outside, ", outside the data directory")):
        for (cat, why), v in sorted(kept.items()):
            console.print(plain(f"kept {cat}: {v.files:,} files, {_mb(v.bytes)}{where} — {why}"), soft_wrap=True)
    if result is not None:
        for r, why in result.skipped:
            console.print(plain(f"left {r.path}: {why}"))
    state = "within" if budget.within else "OVER"
    console.print(f"data directory: {_mb(budget.after_gc_bytes)} after gc, {state} its retention budget of "
                  f"{_mb(budget.bound_bytes)} (README, Retention)", soft_wrap=True)


def gc(
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="say what would be freed; remove nothing")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object: freed, kept, budget")] = False,
) -> None:
    from clkt.retention import apply_plan, budget_of

    settings = load_cli_settings(config)

    async def run() -> tuple[GcPlan, GcResult | None, Budget]:
        async with read_store(settings) as store:
            budget, plan = await budget_of(store, data_dir=settings.data_dir, retention=settings.retention)
            result = None if dry_run else await apply_plan(store, plan)
            return plan, result, budget

    plan, result, budget = run_async(run)
    if as_json:
        import json

        freed = plan.freed() if result is None else result.freed()
        out: dict[str, Any] = {
            "dry_run": dry_run,
            "freed": {c: {"files": k.files, "bytes": k.bytes} for c, k in freed.items()},
            "kept": [{"category": c, "why": w, "files": k.files, "bytes": k.bytes, "inside_data_dir": inside}
                     for inside, kept in ((True, plan.kept), (False, plan.kept_outside))
                     for (c, w), k in sorted(kept.items())],
            "skipped": [{"path": str(r.path), "why": why} for r, why in (result.skipped if result else [])],
            "budget": budget.model_dump(mode="json"),
        }
        print(json.dumps(out))
        return
    _print(plan, result, budget, dry_run)


def verify(ident: IdArg, config: ConfigOption = None) -> None:
    import asyncio

    from clkt.snapshots.stored import load_snapshot
    from storage.snapshots import get_snapshot

    settings = load_cli_settings(config)

    async def check() -> tuple[str, int]:
        async with read_store(settings) as store, store.session() as s:
            row = await get_snapshot(s, ident)
            n = await asyncio.to_thread(_check_files, row.id, row.export_path, row.content_sha256)
            await load_snapshot(s, row.id)  # the rows it was frozen from still hash to its content
            return row.id, n

    sid, n = run_async(check)
    console.print(plain(f"snapshot {sid}: {n} files match their sha256; its rows re-assemble to its content hash"))


def _check_files(snapshot_id: str, export_path: str | None, content_sha256: str) -> int:
    """How many files the manifest lists; `SnapshotError` naming the first file that is missing or differs."""
    from pathlib import Path

    from clkt.errors import SnapshotError
    from clkt.snapshots.layout import load_snapshot_dir

    if not export_path or not Path(export_path).is_dir():
        raise SnapshotError(f"snapshot {snapshot_id}: its export folder {export_path} is not there")
    data = load_snapshot_dir(export_path, verify_hashes=True)
    if data.manifest.snapshot_id != snapshot_id or data.manifest.content_sha256 != content_sha256:
        raise SnapshotError(f"snapshot {snapshot_id}: {export_path}/manifest.json is another snapshot's "
                            f"({data.manifest.snapshot_id})")
    return len(data.manifest.files)
