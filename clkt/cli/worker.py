"""`clkt worker`: consume GPU jobs only (for a GPU machine next to the daemon's store), and write the report of
each snapshot whose jobs have all finished (the `report-writer` service, as the daemon runs it beside its GPU
consumer)."""

from __future__ import annotations

from typing import Annotated

import typer

from clkt.cli.common import ConfigOption, console, fail, load_cli_settings, open_store, plain, run_async

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("worker", help="Consume GPU jobs (injection + evaluation) from the store, and nothing else.")(worker)


def worker(
    config: ConfigOption = None,
    device: Annotated[list[str] | None, typer.Option("--device", "-d", help="device(s) to use: cpu, cuda:0, auto; a comma list (or repeated)")] = None,
    burst: Annotated[bool, typer.Option("--burst", help="exit when no job is left to claim")] = False,
) -> None:
    import aiohttp

    from clkt.cli.vocabulary import comma_list
    from clkt.context import ServiceContext
    from clkt.daemon import Supervisor, install_stop_signals, release_leases
    from clkt.errors import ConfigError
    from clkt.logs import setup_logging
    from clkt.owner import new_owner_id
    from clkt.preflight import check_worker
    from clkt.report.service import ReportService
    from clkt.roster.startup import check_worker_targets
    from clkt.services import gpu_consumer
    from clkt.telemetry import Metrics

    settings = load_cli_settings(config)
    try:
        check_worker(settings, comma_list(device))
    except ConfigError as e:
        raise fail(str(e), 2) from None
    setup_logging(settings.log_level, secrets=settings.secrets.values())

    consumer = gpu_consumer(settings, devices=comma_list(device), burst=burst)
    # the report of each snapshot whose jobs have all finished: the report step is its own service
    reporter = ReportService(data_dir=settings.data_dir, daemon=settings.daemon, burst=burst, spec=settings.spec)

    async def consume() -> None:
        owner = new_owner_id("worker-")
        async with open_store(settings) as store, aiohttp.ClientSession() as http:
            await check_worker_targets(store, settings.spec)  # a target name naming another model: refused
            ctx = ServiceContext(store=store, http=http, owner=owner, metrics=Metrics())
            install_stop_signals(lambda _why: ctx.stopping.set())
            console.print(plain(f"clkt worker {owner}: devices {consumer.devices}; store {settings.resolved_store_url}"))
            try:
                if burst:  # every claimable job first, then one pass of the reports that became due
                    await Supervisor(daemon=settings.daemon).run([consumer], ctx)
                    if not ctx.stopping.is_set():
                        await Supervisor(daemon=settings.daemon).run([reporter], ctx)
                else:
                    await Supervisor(daemon=settings.daemon).run([consumer, reporter], ctx)
            finally:
                await release_leases(store, owner)

    run_async(consume)
    done = sum(r.status is not None and r.status.value == "done" for r in consumer.finished)
    console.print(f"clkt worker: {len(consumer.finished)} job(s) run, {done} done")
