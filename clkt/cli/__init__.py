"""The `clkt` command line (typer). Every area adds its commands through `register(app)` in its module;
what the commands share (the app, the consoles, one-line failures, the store) is in `clkt.cli.common`.

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

import typer
from rich.markup import escape
from typer.models import CommandInfo, TyperInfo

from clkt.cli import (
    core,
    demo,
    evaluate,
    incontext,
    leaderboard,
    maintenance,
    report,
    serve,
    snapshot,
    submit,
    worker,
)
from clkt.cli.common import app, describe_error, err_console, one_line

__all__ = ["PANELS", "app", "main"]

_AREAS = (core, snapshot, worker, report, incontext, evaluate, submit, leaderboard, demo, serve, maintenance)
_registered: list[str] = []

# `clkt --help` groups the commands by the task they serve, in this order (a command left out of it is a test failure:
# tests/cli/test_vocabulary.py)
PANELS: dict[str, tuple[str, ...]] = {
    "Start": ("demo", "run", "status"),
    "Data": ("entities", "snapshot", "audit"),
    "Results": ("report", "leaderboard", "incontext"),
    "Your model": ("evaluate", "submit"),
    "Operations": ("worker", "serve", "intake-token", "gc", "db"),
}
_PANEL_OF = {name: panel for panel, names in PANELS.items() for name in names}
_ORDER = {name: i for i, name in enumerate(_PANEL_OF)}


def _group_commands() -> None:
    """Every command and command group into its panel of `PANELS`, the commands in the panels' order."""
    infos: list[CommandInfo | TyperInfo] = [*app.registered_commands, *app.registered_groups]
    for info in infos:
        info.rich_help_panel = _PANEL_OF.get(info.name or "")
    app.registered_commands.sort(key=lambda c: _ORDER.get(c.name or "", len(_ORDER)))


def _register_areas() -> None:
    if _registered:
        return
    _registered.append("yes")
    for area in _AREAS:
        area.register(app)
    _group_commands()


def _usage_where(e: typer.TyperException) -> str:
    """`clkt <command>: ` for a usage error (it carries the context of the command it was raised in), else ""."""
    # typer's public exception base does not declare the usage errors' context (its click's `Context`)
    path = getattr(getattr(e, "ctx", None), "command_path", None)
    if not isinstance(path, str):
        return ""
    return " ".join(["clkt", *path.split()[1:]]) + ": "


def _print_error(message: str) -> None:
    err_console.print(f"[bold red]clkt:[/] {escape(one_line(message))}", highlight=False)


def main(argv: list[str] | None = None) -> None:
    _register_areas()
    try:
        rc = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False)
    except SystemExit:
        raise
    except typer.TyperException as e:  # typer's public base of its (vendored) click's exceptions
        if type(e).__name__ == "NoArgsIsHelpError":  # typer itself tells it by name (rich_utils), not by import
            # the help, as asked for by no arguments (rich has printed it already; the message is the rest)
            typer.echo(e.format_message(), err=True)
        else:  # a bad option or argument (naming the command), or another refusal: one line
            _print_error(_usage_where(e) + e.format_message())
        raise SystemExit(e.exit_code) from None
    except typer.Abort:
        err_console.print("[bold red]clkt:[/] aborted", highlight=False)
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        err_console.print("[bold red]clkt:[/] interrupted", highlight=False)
        raise SystemExit(130) from None
    except Exception as e:  # noqa: BLE001 - one line naming the cause, never a traceback
        msg, code = describe_error(e)
        _print_error(msg)
        raise SystemExit(code) from None
    if isinstance(rc, int) and rc != 0:
        raise SystemExit(rc)
