"""`clkt incontext SNAPSHOT [--target T]`: run the in-context track of a frozen snapshot (`clkt.incontext`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clkt.cli.common import ConfigOption, console, fail, read_store, run_async, snapshot_id, start_settings

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("incontext", help="Run the in-context track (document in the prompt) of a frozen snapshot; "
                                  "resumable, every call cached.")(incontext)


def incontext(
    snapshot: Annotated[str, typer.Argument(help="snapshot id or a unique prefix of one")],
    target: Annotated[list[str] | None, typer.Option("--target", help="only these targets: A,B (or repeated)")] = None,
    config: ConfigOption = None,
) -> None:
    from clkt.cli.vocabulary import comma_list
    from clkt.incontext.runner import TrackRun, run_incontext

    target = comma_list(target)

    # the chosen targets' keys and models checked before the store is opened (which must exist: a frozen snapshot)
    settings = start_settings(config, targets=target or None, daemon=False)

    async def go() -> tuple[str, list[TrackRun]]:
        async with read_store(settings) as store:
            ident = await snapshot_id(store, snapshot)
            return ident, await run_incontext(
                store=store, snapshot_id=ident, spec=settings.spec, agents=settings.agents, gpu=settings.gpu,
                data_dir=Path(settings.data_dir), secret=settings.secret, targets=target or None,
            )

    ident, runs = run_async(go)
    for r in runs:
        c = r.counts
        jobs = f", {c.from_jobs} floor answers from its jobs' base pass" if c.from_jobs else ""
        console.print(f"{r.target}: {c.asked} answered now{jobs}, {c.already} already stored, {c.unparsed} without a letter, "
                      f"{c.truncated} documents cut, {c.skipped} skipped (prompt too long)")
        if (o := r.open_counts) is not None:
            console.print(f"{r.target} short answers: {o.asked} answered now, {o.already} already stored, "
                          f"{o.other_language} in another language, {o.unscorable} unscorable, {o.truncated} documents "
                          f"cut, {o.skipped} skipped (prompt too long)")
    stopped = [r.error or r.open_error for r in runs if r.error or r.open_error]
    if stopped:
        raise fail(stopped[0] or "", code=1)
    console.print(f"then: clkt report {ident}")
