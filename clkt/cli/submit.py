"""`clkt submit PACK`: verify a result pack (`clkt evaluate`'s) against this store's snapshot and store it once
(`clkt.packs.intake`). A refusal is one line, exit 2, and the store as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from clkt.cli.common import ConfigOption, console, err_console, load_cli_settings, plain, read_store, run_async

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("submit", help="Verify a result pack (clkt evaluate) against this store's snapshot and store it; "
                               "the same pack twice changes nothing.")(submit)


def submit(
    pack: Annotated[Path, typer.Argument(help="the pack: a folder or a .tar.gz archive")],
    config: ConfigOption = None,
) -> None:
    from clkt.packs.intake import submit_pack
    from clkt.packs.pack import read_pack

    settings = load_cli_settings(config)
    store_ = read_store(settings)  # never creates a store: a pack is checked against an existing one

    async def go() -> Any:
        loaded = read_pack(pack)  # the files first: a bad pack never opens the store
        async with store_ as store:
            return await submit_pack(store, loaded, buffer_days=settings.spec.temporal_buffer_days)

    got = run_async(go)
    if not got.stored:
        console.print(plain(f"pack {got.pack_sha256[:12]} ({got.target} on {got.snapshot_id}) was submitted before: "
                            "nothing changed"))
        return
    if not got.claims_match:
        err_console.print(plain(f"clkt: warning: the pack's metrics.json does not match its predictions "
                                f"({got.claims_note}); the metrics recomputed here are stored, the pack's claims ignored"),
                          highlight=False)
    if got.flags_fixed:
        err_console.print(plain(f"clkt: warning: {got.flags_fixed} answers' `correct` disagreed with their letter "
                                "against this store's answer key; scored by the letters"), highlight=False)
    console.print(plain(f"submitted pack {got.pack_sha256[:12]}: {got.target} on {got.snapshot_id}"))
    if got.metrics is not None:
        for scorer, m in got.metrics.scorers.items():
            means = ", ".join(f"{k} {v * 100:.1f} %" if v is not None else f"{k} n/a" for k, v in m.means.items())
            console.print(plain(f"  {scorer}: {means} (mean over {len(m.pairs)} language pairs)"))
