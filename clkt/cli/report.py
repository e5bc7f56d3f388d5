"""`clkt report SNAPSHOT`: print the Table 2 layout and write CSV, JSON, PNG figures and Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clkt.cli.common import ConfigOption, console, load_cli_settings, print_table, read_store, run_async, snapshot_id

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("report", help="Report a snapshot's transfer metrics (Table 2, heatmaps, CSV/JSON/Markdown).")(report)


def report(
    snapshot: Annotated[str, typer.Argument(help="snapshot id (or a unique prefix)")],
    config: ConfigOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="output folder (default <data_dir>/reports/<snapshot>)")] = None,
) -> None:
    import asyncio

    from clkt.report.writer import (
        ReportData,
        ReportPaths,
        load_report_data,
        render_tables,
        report_dir,
        write_report_files,
    )

    settings = load_cli_settings(config)

    async def load_report() -> tuple[ReportPaths, ReportData]:
        async with read_store(settings) as store:
            sid = await snapshot_id(store, snapshot)
            out_dir = out or report_dir(settings.data_dir, sid)
            data = await load_report_data(store, sid, spec=settings.spec)
            return await asyncio.to_thread(write_report_files, data, out_dir), data

    paths, data = run_async(load_report)
    for t in render_tables(data):
        print_table(t)
    for note in data.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"report: {paths.markdown}")
    for f in [paths.table_csv, paths.pairs_csv, paths.json, *paths.figures]:
        console.print(f"  {f}")
