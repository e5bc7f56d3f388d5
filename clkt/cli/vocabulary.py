"""One name per concept across the commands, and the old spellings kept for a release.

- a target of the configuration: `--target NAME` (a comma list, or the option repeated, where several may be named);
- a model's weights: `--model-path` (a local folder, a cached Hugging Face id, or `embedded:<name>`);
- a list: one comma-separated value (`--compare-targets A,B`, `--compare-strategies A,B`, `--train-languages en,fr`),
  the option repeated adding to it;
- a snapshot: its id or a unique prefix of one (`clkt.cli.common.snapshot_id`); `clkt snapshot latest` prints the
  latest frozen one's.

An old spelling (`evaluate --name`, `submit --model`, `leaderboard --compare A B`) is a hidden option that still works
and says once, on stderr, which spelling replaces it (`deprecated`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from clkt.cli.common import err_console, fail

__all__ = ["comma_list", "deprecated", "name_pair", "renamed", "target_options"]

T = TypeVar("T")


def comma_list(values: Iterable[str] | None) -> list[str] | None:
    """The names of a list option, each value split at its commas (`--target a,b --target c` -> [a, b, c]); None when
    the option was not given, and a value with no name in it is refused."""
    if values is None:
        return None
    out: list[str] = []
    for value in values:
        names = [x.strip() for x in value.split(",") if x.strip()]
        if not names:
            raise fail(f"{value!r} names nothing: give one name or a comma list (a,b)")
        out.extend(names)
    return out or None


def name_pair(value: str | None, option: str) -> tuple[str, str] | None:
    """`A,B` -> (A, B): two different names (None when the option was not given)."""
    if value is None:
        return None
    names = comma_list([value]) or []
    if len(names) != 2 or names[0] == names[1]:
        raise fail(f"{option} {value!r}: two different names, A,B")
    return names[0], names[1]


def deprecated(old: str, new: str) -> None:
    """The one-line notice of an old spelling, on stderr (what the command prints on stdout stays the same)."""
    err_console.print(f"clkt: warning: {old} is deprecated; use {new}", highlight=False, markup=False)


def renamed(new_value: T | None, old_value: T | None, *, new: str, old: str) -> T | None:
    """The value of an option given by its new spelling or by its old one (then with the notice); both: refused."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise fail(f"{old} and {new} are one option (the first its old spelling): give {new} only")
    deprecated(old, new)
    return old_value


def target_options(compare_targets: str | None, compare: tuple[str, str] | None,
                   targets: list[str] | None) -> tuple[tuple[str, str] | None, list[str] | None]:
    """`clkt leaderboard`'s targets: the pair compared (`--compare-targets A,B`, or the old `--compare A B`) and the
    targets named (`--target A,B`)."""
    pair = renamed(name_pair(compare_targets, "--compare-targets"), compare, new="--compare-targets A,B",
                   old="--compare A B")
    return pair, comma_list(targets)
