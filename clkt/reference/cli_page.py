"""docs/reference/cli.md: every `clkt` command, from the Typer app (`clkt.cli`) as the shell sees it.

The click command tree (`typer.main.get_command`) gives each command's usage line, help and parameters; the
commands are grouped by the help panels of `clkt --help` (`clkt.cli.PANELS`). Hidden options are the old
spellings kept for a release (CHANGELOG.md): each is listed, marked deprecated, under its command."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from clkt.reference._text import code, escape, generated_header, table

__all__ = ["render_cli"]

_INTRO = """\
Every command of `clkt`, generated from the command line itself. `clkt COMMAND --help` prints the same text;
every command also takes `--help`, left out of the tables below. A *hidden* option is an old spelling still
accepted for a release (it prints a one-line deprecation warning on stderr): each is listed under its command,
marked **deprecated**, with the option that replaces it in its help. Exit codes: 0 done, 2 refused input or
configuration, 1 an environment or internal failure, 130 interrupted.
"""


def _root() -> tuple[Any, Any, dict[str, tuple[str, ...]]]:
    """The click group of `clkt`, its context and the help panels."""
    import typer.main

    import clkt.cli as cli

    cli._register_areas()
    group = typer.main.get_command(cli.app)
    return group, group.make_context("clkt", [], resilient_parsing=True), cli.PANELS


def _walk(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """`command` and, for a group, each of its subcommands (in the group's listing order), with their contexts."""
    yield command, ctx
    for name in getattr(command, "list_commands", lambda _ctx: [])(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            yield from _walk(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True))


def _default(p: Any) -> str:
    if p.required:
        return "required"
    value = p.default
    if callable(value):
        return "computed"
    if value is None or value == () or value == []:
        return "&mdash;"
    if isinstance(value, bool):
        return code(str(value).lower())
    return code(", ".join(map(str, value)) if isinstance(value, list | tuple) else value)


def _kind(p: Any, first: str, names: list[str]) -> str:
    """The parameter's type as `--help` shows it (`<path>`, `local|ray`), without its names."""
    if getattr(p, "is_flag", False):
        return "flag"
    known = {n.lower() for n in names}
    words = [t for t in first.replace(",", " ").replace(" / ", " ").split() if t.lower() not in known]
    return " ".join(words) or "text"


def _short_first(name: str) -> tuple[bool, str]:
    return name.startswith("--"), name


def _row(p: Any, ctx: Any) -> list[str]:
    is_argument = p.param_type_name == "argument"
    names = [p.metavar or p.name.upper()] if is_argument else sorted([*p.opts, *p.secondary_opts], key=_short_first)
    record = None if p.hidden else p.get_help_record(ctx)
    kind = _kind(p, record[0] if record else "", names)
    text = escape(record[1] if record else (p.help or ""))
    if p.hidden:
        text = "**deprecated** (hidden)" + (f": {text}" if text else "")
    return [code(", ".join(names)), escape(kind), _default(p), text]


def _command(command: Any, ctx: Any) -> str:
    path = ctx.command_path
    out = f"### `{path}`\n\n"
    if command.help:
        out += "\n\n".join(escape(p) for p in command.help.replace("\b", "").split("\n\n") if p.strip()) + "\n\n"
    usage: str = command.get_usage(ctx)
    out += "```text\n" + usage.removeprefix("Usage: ") + "\n```\n\n"
    params = [p for p in command.get_params(ctx) if p.name != "help"]
    if params:
        out += table(["option or argument", "type", "default", "help"], [_row(p, ctx) for p in params]) + "\n"
    if getattr(command, "list_commands", None) and command.list_commands(ctx):
        out += "Subcommands: " + ", ".join(code(f"{path} {n}") for n in command.list_commands(ctx)) + ".\n\n"
    return out


def render_cli() -> str:
    group, ctx, panels = _root()
    out = generated_header("Command line", _INTRO)
    out += _command(group, ctx).replace("### `clkt`", "## `clkt`", 1)
    listed: set[str] = set()
    for panel, names in panels.items():
        out += f"## {panel}\n\n"
        for name in names:
            command = group.get_command(ctx, name)
            if command is None:
                raise ValueError(f"clkt.cli.PANELS names {name!r}, which is no command")
            listed.add(name)
            sub_ctx = command.make_context(name, [], parent=ctx, resilient_parsing=True)
            out += "".join(_command(c, x) for c, x in _walk(command, sub_ctx))
    missing = sorted(set(group.list_commands(ctx)) - listed)
    if missing:  # tests/cli/test_vocabulary.py refuses this too: a command outside every panel
        raise ValueError(f"commands in no help panel of clkt.cli.PANELS: {missing}")
    return out
