"""The `clkt` command line (typer). Areas add their commands through `register(app)` in their module."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from clkt.config import Settings, load_settings
from clkt.errors import ClktError, ConfigError

__all__ = ["app", "main", "load_cli_settings", "open_store", "run_async", "ConfigOption", "console", "fail"]

T = TypeVar("T")

app = typer.Typer(
    name="clkt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="A live benchmark of cross-lingual knowledge transfer in LLMs.",
)
console = Console()
err_console = Console(stderr=True, soft_wrap=True)

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="clkt.toml; without it, the embedded offline demonstration config", envvar="CLKT_CONFIG_FILE"),
]


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]clkt:[/] {message}", highlight=False)
    return typer.Exit(code)


def load_cli_settings(config: Path | None) -> Settings:
    try:
        return load_settings(config)
    except ConfigError as e:
        raise fail(str(e), 2) from None


def open_store(settings: Settings) -> Any:
    from storage.engine import Store

    return Store(url=settings.resolved_store_url)


def run_async(fn: Callable[[], Awaitable[T]]) -> T:
    try:
        return asyncio.run(fn())  # type: ignore[arg-type]
    except ClktError as e:
        raise fail(str(e), 2) from None


_AREAS = ("clkt.cli.core", "clkt.cli.snapshot", "clkt.cli.worker", "clkt.cli.report", "clkt.cli.demo")


def _register_areas() -> None:
    for name in _AREAS:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).register(app)


def main(argv: list[str] | None = None) -> None:
    _register_areas()
    app(args=argv if argv is not None else sys.argv[1:])
