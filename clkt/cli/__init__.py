"""The `clkt` command line (typer). Areas add their commands through `register(app)` in their module.

Every failure is ONE line on stderr naming the cause, never a traceback: `main()` maps what escapes a
command (a `ClktError`, an `OSError`, a driver error, anything else) to `clkt: <cause>` and an exit code
(2: refused input or config; 1: an environment or internal failure; 130: interrupted). Messages go
through `clkt.logs.redact` and crawled text is printed as text (`plain()`): no markup, no control characters.
"""

from __future__ import annotations

import sys

if sys.argv[1:2] == ["run"]:
    # `clkt run`: remember a SIGTERM from the first moment on, so one that arrives while the CLI still
    # loads is a clean stop, not exit 143
    from clkt.process import remember_early_stops

    remember_early_stops()

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from clkt.config import Settings, load_settings
from clkt.errors import ConfigError
from clkt.logs import redact, sanitize_text
from clkt.messages import describe_error, one_line

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = [
    "app", "main", "load_cli_settings", "open_store", "run_async", "ConfigOption", "console", "fail", "plain",
    "one_line", "describe_error",
]

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



def plain(text: object) -> Text:
    """Crawled or stored text for a rich table or print: literal (never markup), control characters removed."""
    return Text(sanitize_text(redact(str(text))))


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]clkt:[/] {escape(one_line(message))}", highlight=False)
    return typer.Exit(code)


def load_cli_settings(config: Path | None) -> Settings:
    try:
        return load_settings(config)
    except ConfigError as e:
        raise fail(str(e), 2) from None


def open_store(settings: Settings) -> Store:
    """The configured store, not yet opened: `async with open_store(settings) as store:` opens and closes it."""
    from storage.engine import Store

    return Store(url=settings.resolved_store_url)


def run_async(fn: Callable[[], Awaitable[T]]) -> T:
    try:
        return asyncio.run(fn())  # type: ignore[arg-type]
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - one line naming the cause, never a traceback
        msg, code = describe_error(e)
        raise fail(msg, code) from None


_AREAS = ("clkt.cli.core", "clkt.cli.snapshot", "clkt.cli.worker", "clkt.cli.report", "clkt.cli.demo", "clkt.cli.serve")


_registered: list[str] = []


def _register_areas() -> None:
    if _registered:
        return
    _registered.append("yes")
    for name in _AREAS:  # every area's module exists: a missing one is an installation error, said as such
        importlib.import_module(name).register(app)


def main(argv: list[str] | None = None) -> None:
    _register_areas()
    try:  # typer 0.2x carries its own copy of click
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover - older typer on click itself
        from click import exceptions as cx  # type: ignore[no-redef]

    try:
        rc = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False)
    except SystemExit:
        raise
    except cx.NoArgsIsHelpError as e:
        e.show()  # the help, as asked for by no arguments
        raise SystemExit(e.exit_code) from None
    except cx.UsageError as e:  # a bad option or argument: one line, naming it
        where = " ".join(["clkt", *e.ctx.command_path.split()[1:]]) + ": " if e.ctx is not None else ""
        err_console.print(f"[bold red]clkt:[/] {escape(one_line(where + e.format_message()))}", highlight=False)
        raise SystemExit(e.exit_code) from None
    except cx.ClickException as e:
        err_console.print(f"[bold red]clkt:[/] {escape(one_line(e.format_message()))}", highlight=False)
        raise SystemExit(e.exit_code) from None
    except cx.Abort:
        err_console.print("[bold red]clkt:[/] aborted", highlight=False)
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        err_console.print("[bold red]clkt:[/] interrupted", highlight=False)
        raise SystemExit(130) from None
    except Exception as e:  # noqa: BLE001 - one line naming the cause, never a traceback
        msg, code = describe_error(e)
        err_console.print(f"[bold red]clkt:[/] {escape(one_line(msg))}", highlight=False)
        raise SystemExit(code) from None
    if isinstance(rc, int) and rc != 0:
        raise SystemExit(rc)
