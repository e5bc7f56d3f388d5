"""What every `clkt` command shares: the typer app, the consoles, the config option, one-line failures,
opening the store and running a coroutine (its failure as one line, never a traceback)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer import rich_utils
from typer.core import TyperOption

from clkt.config import Settings, load_settings
from clkt.errors import ConfigError
from clkt.logs import redact, sanitize_text
from clkt.messages import describe_error, one_line

if TYPE_CHECKING:
    from storage.engine import Store

__all__ = [
    "ConfigOption", "app", "console", "describe_error", "err_console", "fail", "load_cli_settings", "one_line",
    "open_store", "plain", "plural", "print_table", "read_store", "run_async",
    "snapshot_id", "start_settings",
]

T = TypeVar("T")

def _flag_type(option: TyperOption, ctx: typer.Context) -> str | None:
    """The type column of `--help`: none for a flag (typer would print `<bool>` beside every flag)."""
    return None if option.is_flag else _typer_type(option, ctx)


_typer_type = TyperOption.display_type_rich
TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign,assignment]


def _literal_help(*, text: str, style: str = "", markup_mode: Literal["markdown", "rich"]) -> Markdown | Text:
    """A help text as written: rich markup would eat `[gpu]` ("a [gpu] job setting" -> "a  job setting"), and no
    help of ours is markup."""
    return _typer_rich_text(text=escape(text) if markup_mode == "rich" else text, style=style, markup_mode=markup_mode)


_typer_rich_text = rich_utils._make_rich_text
rich_utils._make_rich_text = _literal_help

app = typer.Typer(
    name="clkt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="A live benchmark of cross-lingual knowledge transfer in LLMs.",
)  # the commands are registered by `clkt.cli` (every area's `register(app)`)


def _print_version(value: bool) -> None:
    if value:
        from clkt import __version__

        print(f"clkt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    pass
class _OutConsole(Console):
    """stdout's console: on a terminal as wide as the terminal; into a pipe or a file as wide as each line needs
    (nothing wrapped or folded: a snapshot id a script reads stays on one line), unless a width was given (COLUMNS,
    or a test's `console.width`)."""

    UNBOUNDED = 1 << 14  # the width of a line that goes to a program (a table is as wide as its cells, never padded)

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(self.UNBOUNDED, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = _OutConsole()
err_console = Console(stderr=True, soft_wrap=True)

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="clkt.toml; without it, the embedded offline demonstration config", envvar="CLKT_CONFIG_FILE"),
]


def plain(text: object) -> Text:
    """Crawled or stored text for a rich table or print: literal (never markup), control characters removed."""
    return Text(sanitize_text(redact(str(text))))


def plural(n: int, one: str, many: str) -> str:
    """`1 entity`, `2 entities`."""
    return f"{n:,} {one if n == 1 else many}"


def _cell_width(cell: object, *, word: bool = False) -> int:
    """A cell's width on one line (or its longest word's, which is as narrow as rich wraps it without folding)."""
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(cell).plain if isinstance(cell, str) else ""
    return max((Text(w).cell_len for w in text.split()), default=0) if word else Text(text).cell_len


def print_table(table: Table) -> None:
    """Print a table whose every cell (header included) folds onto more lines where the terminal is narrow: an
    identifier, a scorer name or a p-value is never cut to `…`. A column made `no_wrap` (an id to copy) keeps its
    values on one line while the other columns still fit unfolded beside it, and folds beyond that."""
    kept = [c for c in table.columns if c.no_wrap]
    needed = 3 * len(table.columns) + 1  # the borders and padding
    for column in table.columns:
        cells = [column.header, *column.cells]
        needed += max((_cell_width(c, word=column not in kept) for c in cells), default=0)
        column.overflow = "fold"
        column.no_wrap = False
    if needed <= console.width:
        for column in kept:
            column.min_width = max((_cell_width(c) for c in column.cells), default=0)
    console.print(table)


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]clkt:[/] {escape(one_line(message))}", highlight=False)
    return typer.Exit(code)


def load_cli_settings(config: Path | None) -> Settings:
    """The validated config, checked whole before the command starts anything (every target's cutoff too)."""
    from clkt.cutoff import check_cutoffs

    try:
        settings = load_settings(config)
        check_cutoffs(settings.spec)
        return settings
    except ConfigError as e:
        raise fail(str(e), 2) from None


def start_settings(config: Path | None, *, targets: Sequence[str] | None = None, daemon: bool = True) -> Settings:
    """`load_cli_settings`, then every error a command that starts work can know before it creates, writes or
    opens anything (`clkt.preflight.check_start`: API keys, local model folders, the daemon's own needs)."""
    from clkt.preflight import check_start

    settings = load_cli_settings(config)
    try:
        check_start(settings, targets=targets, daemon=daemon)
    except ConfigError as e:
        raise fail(str(e), 2) from None
    return settings


def open_store(settings: Settings) -> Store:
    """The configured store, not yet opened: `async with open_store(settings) as store:` opens and closes it."""
    from storage.engine import Store

    return Store(url=settings.resolved_store_url)


def read_store(settings: Settings) -> Store:
    """The configured store for a command that only reads: like `open_store`, but a SQLite store that does not
    exist is refused (one line naming the path looked at, exit 1) instead of created empty."""
    from storage.engine import sqlite_path

    path = sqlite_path(settings.resolved_store_url)
    if path is not None and not path.is_file():
        raise fail(f"no store here: {path.absolute()} does not exist; point at one with --config <clkt.toml> (its "
                   "data_dir or store_url), or run `clkt demo` to make the demonstration's", 1)
    return open_store(settings)


async def snapshot_id(store: Store, ident: str) -> str:
    """The one rule every command names a snapshot by: its id or a unique prefix of one (`UserError` naming the
    choices or `clkt snapshot list` otherwise)."""
    from storage.snapshots import get_snapshot

    async with store.session() as s:
        return (await get_snapshot(s, ident)).id


def run_async(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        return asyncio.run(fn())
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - one line naming the cause, never a traceback
        msg, code = describe_error(e)
        raise fail(msg, code) from None
