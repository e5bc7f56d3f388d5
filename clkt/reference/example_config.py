"""`clkt.example.toml`: every configuration key with its default, generated from the settings' models.

Each table of the settings (`_tree.settings_tables`) in order, its description as a comment above it, each key's
description above the key (said once: a description shared by several tables, such as every source's, is written
at its first table only). A key with a value is written as TOML; a key unset by default is a commented line
`# key =  # unset`; a table of named tables (`[agents.providers.<name>]`), empty by default, is written commented
out with its keys. Loading the file therefore gives exactly the defaults (tests/docs/test_example_config.py)."""

from __future__ import annotations

import textwrap

from pydantic import BaseModel

from clkt.reference._fields import FieldDoc, toml_value
from clkt.reference._text import GENERATED_BY
from clkt.reference._tree import Table, settings_tables

__all__ = ["UNSET", "render_example"]

UNSET = "# unset"
WIDTH = 116

_HEAD = f"""\
# clkt.example.toml: every configuration key with its default. Generated from the settings' models by
# `{GENERATED_BY}`: do not edit by hand (docs/reference/config.md lists the same keys with their types).
#
# Copy it to clkt.toml and change what you need. Every key is optional: a key left out takes the value shown here,
# so this file unchanged configures exactly what a file with no keys does (without --config, clkt runs its offline
# demonstration profile, clkt/config/demo.toml, instead). Run with:  clkt run --config clkt.toml
# Any key can be set from the environment instead: CLKT_<TABLE>__<KEY>, e.g. CLKT_GPU__EPOCHS=3 (lists and tables
# as JSON). API keys NEVER go in this file: a table names the environment variable that holds its key (api_key_env).
"""


def _comment(text: str, *, prefix: str = "# ") -> list[str]:
    return textwrap.wrap(" ".join(text.split()), WIDTH - len(prefix), initial_indent=prefix, subsequent_indent=prefix,
                         break_on_hyphens=False, break_long_words=False) if text.strip() else []


def _key(key: FieldDoc, value: object, *, commented: bool) -> str:
    if value is None:
        return f"# {key.name} =  {UNSET} ({key.type})"
    line = f"{key.name} = {toml_value(value)}"
    return "# " + line if commented else line


def _table(t: Table, said: set[str]) -> list[str]:
    out = ["", *_comment(t.description)]
    commented = t.kind == "named"
    if commented:
        out += _comment("none by default; one such table per name, with these keys:")
    out.append(("# " if commented else "") + t.header)
    values = _values(t)
    for key in t.keys:
        if key.description and key.description not in said:
            said.add(key.description)
            out += _comment(key.description)
        out.append(_key(key, values.get(key.name), commented=commented))
    return out


def _values(t: Table) -> dict[str, object]:
    """The value each key of `t` takes by default (an array of tables: its first element's)."""
    if t.kind == "array" and isinstance(t.default, list) and t.default and isinstance(t.default[0], dict):
        return dict(t.default[0])
    return {k.name: _parse(k) for k in t.keys}


def _parse(key: FieldDoc) -> object:
    """A key's default back as data (FieldDoc keeps it as a TOML value; "unset" is None)."""
    import tomllib

    if key.default is None or key.default == "unset":
        return None
    return tomllib.loads(f"v = {key.default}")["v"]


def render_example(root: type[BaseModel] | None = None) -> str:
    said: set[str] = set()
    lines = _HEAD.splitlines()
    for t in settings_tables(root):
        if t.keys:
            lines += _table(t, said)
    return "\n".join(lines) + "\n"
