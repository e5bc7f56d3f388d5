"""Core commands: run, status, entities, db upgrade."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from clkt.cli.common import (
    ConfigOption,
    console,
    fail,
    load_cli_settings,
    open_store,
    plain,
    plural,
    print_table,
    read_store,
    run_async,
    start_settings,
)
from clkt.facts import Domain
from storage.enums import EntityStatus

if TYPE_CHECKING:
    from clkt.status import PublishStatus

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("run", help="Run the daemon (same as run_daemon.py).")(run)
    app.command("status", help="Queue counts per stage and status, entities, GPU jobs, last errors, cost.")(status)
    app.command("entities", help="Query the store for entities.")(entities)
    db = typer.Typer(help="Store maintenance.", no_args_is_help=True)
    db.command("upgrade", help="Apply the store's migrations.")(db_upgrade)
    app.add_typer(db, name="db")


def run(config: ConfigOption = None) -> None:
    from clkt.process import run_daemon_process

    raise typer.Exit(run_daemon_process(start_settings(config)))


def status(config: ConfigOption = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    from clkt.status import StatusReport, accounting_table, collect_status, cost_table, knowledge_table

    settings = start_settings(config)  # the config the daemon runs, refused as `clkt run` would refuse it

    async def read_status() -> StatusReport:
        async with read_store(settings) as store:
            return await collect_status(store, spec=settings.spec)

    rep = run_async(read_status)
    if as_json:
        from clkt.logs import redact

        console.print_json(redact(rep.model_dump_json()))  # error texts stored before redaction existed, too
        return
    console.print("[bold]clkt status[/] — store", plain(settings.resolved_store_url))
    t = Table("entities", "n", title="Entities by status")
    for k, n in sorted(rep.entities.items()):
        t.add_row(k, str(n))
    print_table(t)
    from clkt.pipeline.flow import STAGE_ORDER

    t = Table("stage", "pending", "leased", "done", "failed", title="Stage queue")
    in_flow = {name: i for i, name in enumerate(STAGE_ORDER)}  # the flow's order, then any other stage by name
    for stage, by in sorted(rep.stages.items(), key=lambda kv: (in_flow.get(kv[0], len(in_flow)), kv[0])):
        t.add_row(stage, *(str(by.get(k, 0)) for k in ("pending", "leased", "done", "failed")))
    if rep.gpu_jobs:
        t.add_row("gpu", *(str(rep.gpu_jobs.get(k, 0)) for k in ("pending", "leased", "done", "failed")))
    print_table(t)
    if rep.gpu_engine is not None:
        line = plain(rep.gpu_engine.line() + f" (as of {rep.gpu_engine.updated_at:%Y-%m-%d %H:%M:%S} UTC)")
        line.stylize("yellow" if rep.gpu_engine.waiting else "green")
        console.print(line)
    if rep.snapshots:
        console.print("Snapshots: " + ", ".join(f"{k}={v}" for k, v in sorted(rep.snapshots.items())))
    if rep.accounting:
        print_table(accounting_table(rep.accounting))
    if rep.targets.snapshots:  # targets over time: how many entities of each snapshot are valid for each target
        inactive = {x.name for x in rep.targets.targets if not x.active}
        t = Table("snapshot", "target", "status", "entities", "excluded", "valid", title="Targets per snapshot")
        t.columns[0].no_wrap = True  # an id to copy: on one line where it fits (print_table)
        for v in rep.targets.snapshots:
            status = v.status + (f" ({v.probed}/{v.entities} asked)" if v.probed is not None else "")
            t.add_row(v.snapshot_id, plain(v.target + (" (inactive)" if v.target in inactive else "")), status,
                      str(v.entities), str(v.excluded), str(v.valid))
        print_table(t)
    for note in rep.targets.notes():
        console.print(plain(note))
    _print_publish(rep.publish, daemon_runs=_daemon_runs(settings.data_dir))
    if rep.skipped:
        t = Table("source", "reason", "n", title="Skipped records")
        for src, by in sorted(rep.skipped.items()):
            for reason, n in sorted(by.items()):
                t.add_row(src, plain(reason), str(n))
        print_table(t)
    print_table(cost_table(rep.cost))
    if rep.knowledge is not None and rep.knowledge.targets:
        print_table(knowledge_table(rep.knowledge))
    if rep.last_errors:
        t = Table("stage", "entity", "key", "tries", "last error", title="Failed work")
        for e in rep.last_errors:
            t.add_row(e.stage, str(e.entity_id), plain(e.key), str(e.attempts), plain(str(e.error)[:120]))
        print_table(t)


def _daemon_runs(data_dir: Path) -> bool:
    """Whether a daemon runs on this data directory, as far as its info file says (one on another host: yes)."""
    import json
    import os
    import socket

    from clkt.daemon_info import daemon_info_path

    try:
        info = json.loads(daemon_info_path(data_dir).read_text())
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if info.get("host") != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _print_publish(pub: PublishStatus, *, daemon_runs: bool) -> None:
    """Publishing to the Hub (`clkt.publish`): the queue, what waits or failed and why, the latest revisions."""
    if not pub.tasks and not pub.revisions and not pub.retractions:
        return
    console.print("Publishing: " + (", ".join(f"{k}={v}" for k, v in sorted(pub.tasks.items())) or "no task")
                  + f"; {pub.retractions} retraction(s)")
    if pub.open_tasks:
        t = Table("snapshot", "repo@branch", "status", "why", "tries", "Hub failures", "next try (UTC)", "last error",
                  title="Publish tasks waiting, running or failed")
        t.columns[0].no_wrap = True
        for p in pub.open_tasks:
            t.add_row(plain(p.snapshot_id), plain(f"{p.repo}@{p.branch}"), p.status, plain(p.reason), str(p.attempts),
                      str(p.hub_failures), p.not_before.strftime("%Y-%m-%d %H:%M:%S"), plain(str(p.last_error or "")[:120]))
        print_table(t)
        now = datetime.now(UTC)
        for p in pub.open_tasks:
            if p.status == "pending" and p.not_before <= now and not daemon_runs:
                console.print(plain(
                    f"publish of {p.snapshot_id} to {p.repo}@{p.branch}: due since {p.not_before:%Y-%m-%d %H:%M} UTC, "
                    f"waiting for a daemon (none runs here: `clkt run`); publish it now with `clkt snapshot publish "
                    f"{p.snapshot_id}`, or withdraw it with `clkt snapshot publish {p.snapshot_id} --cancel`"), style="yellow")
    if pub.revisions:
        t = Table("snapshot", "repo@branch", "revision", "commit", "test split", "retracted", "committed (UTC)",
                  title="Latest publish revisions")
        t.columns[0].no_wrap = True
        for r in pub.revisions[:10]:
            t.add_row(plain(r.snapshot_id), plain(f"{r.repo}@{r.branch}"), str(r.revision), r.commit[:12],
                      "held" if r.held else "published", str(r.retracted), r.committed_at.strftime("%Y-%m-%d %H:%M"))
        print_table(t)


_DOMAINS = tuple(d.value for d in Domain)  # the choices of `clkt entities --domain` and `--status`
_STATUSES = tuple(s.value for s in EntityStatus)


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise fail(f"--since: {value!r} is not an ISO date (YYYY-MM-DD)") from None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def entities(
    config: ConfigOption = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="only entities after every target's cutoff + buffer")] = False,
    domain: Annotated[str | None, typer.Option("--domain", help=f"one of: {', '.join(_DOMAINS)}")] = None,
    since: Annotated[str | None, typer.Option("--since", help="occurred on or after (YYYY-MM-DD)")] = None,
    status_: Annotated[str | None, typer.Option("--status", help=f"one of: {', '.join(_STATUSES)}")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100000)] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    from clkt.cutoff import fresh_after
    from storage.entities import EntityQuery, EntitySummary, count_matching, query_entities

    settings = load_cli_settings(config)
    if domain is not None and domain not in _DOMAINS:
        raise fail(f"--domain: unknown domain {domain!r}; choose from {list(_DOMAINS)}")
    if status_ is not None and status_ not in _STATUSES:
        raise fail(f"--status: unknown status {status_!r}; choose from {list(_STATUSES)}")
    after = _parse_since(since)
    if fresh:
        f = fresh_after(settings.spec)
        after = max(after, f) if after else f
    q = EntityQuery(domain=domain, occurred_after=after, status=status_, limit=limit)

    async def read_entities() -> tuple[list[EntitySummary], int]:
        async with read_store(settings) as store, store.session() as s:
            return await query_entities(s, q), await count_matching(s, q)

    rows, matched = run_async(read_entities)
    if as_json:
        from pydantic import TypeAdapter

        line = TypeAdapter(EntitySummary)
        for r in rows:
            print(line.dump_json(r).decode())
        return
    shown = plural(matched, "entity", "entities") if len(rows) == matched else f"showing {len(rows)} of {plural(matched, 'entity', 'entities')}"
    t = Table("id", "domain", "source", "occurred", "status", "name", title=shown)
    for r in rows:
        t.add_row(str(r.id), r.domain, r.source, r.occurred_at.date().isoformat(), r.status, plain(r.name[:60]))
    print_table(t)


def db_upgrade(config: ConfigOption = None) -> None:
    settings = load_cli_settings(config)

    async def upgrade() -> None:
        async with open_store(settings):
            pass

    run_async(upgrade)
    console.print(plain(f"store {settings.resolved_store_url} is at the latest migration"))

