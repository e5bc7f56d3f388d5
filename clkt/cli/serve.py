"""`clkt serve`: the status pages against a store, without a daemon (read-only; the live source state, which
only a running daemon knows, is shown as unknown)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer

from clkt.cli.common import ConfigOption, console, load_cli_settings, plain, read_store, run_async

__all__ = ["register"]

log = logging.getLogger("clkt.serve")


def register(app: typer.Typer) -> None:
    app.command("serve", help="Serve the read-only status pages of a store (no daemon needed).")(serve)


def serve(
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option("--host", help="bind address (default http.host, loopback)")] = None,
    port: Annotated[int | None, typer.Option("--port", min=0, max=65535, help="port (default http.port; 0: any free port)")] = None,
) -> None:
    from clkt.config import HttpSettings
    from clkt.endpoint import listen
    from clkt.errors import ConfigError
    from clkt.services import page_context
    from clkt.web import pages_app

    settings = load_cli_settings(config)
    try:
        http = HttpSettings.model_validate({**settings.http.model_dump(), **({"host": host} if host else {}),
                                            **({"port": port} if port is not None else {})})
    except ValueError as e:
        raise ConfigError("--host/--port", str(e).splitlines()[-1]) from None
    settings = settings.model_copy(update={"http": http})
    if not http.is_loopback():
        console.print(plain(f"warning: serving on {http.host}, beyond loopback, without authentication"), style="yellow")

    async def serve_pages() -> None:
        async with read_store(settings) as store:
            app = pages_app(page_context(settings, store=store))
            try:
                runner, bound = await listen(app, http.host, http.port)
            except OSError as e:
                raise ConfigError("http.port", f"cannot listen on {http.host}:{http.port} ({e.strerror or e}); choose another with --port") from None
            shown = f"[{http.host}]" if ":" in http.host else http.host
            print(f"clkt serve: status pages on http://{shown}:{bound}/ (store {store.url}); Ctrl-C stops", flush=True)
            try:
                await asyncio.Event().wait()
            finally:
                await runner.cleanup()

    try:
        run_async(serve_pages)
    except KeyboardInterrupt:
        console.print("stopped")
