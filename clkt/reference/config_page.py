"""docs/reference/config.md: every configuration key, from the settings' pydantic models (`clkt.config`)."""

from __future__ import annotations

from pydantic import BaseModel

from clkt.reference._fields import toml_value
from clkt.reference._text import code, escape, generated_header, table
from clkt.reference._tree import Table, settings_tables

__all__ = ["render_config"]

_INTRO = """\
`clkt run --config clkt.toml` (and every command's `--config`) reads one TOML file; without one, the packaged offline
demonstration profile (`clkt/config/demo.toml`) is read instead. A key the file leaves out takes the default below:
`clkt.example.toml` at the repository's root lists every key with that default (it is generated with this page).

**Environment overrides.** Any key can be set from the environment: `CLKT_` then the key's path joined with `__`,
upper case (the names are not case-sensitive), e.g. `CLKT_GPU__EPOCHS=3` or `CLKT_SOURCES__USGS__OPTIONS__MIN_MAGNITUDE=4.5`.
The environment wins over the file, the file over the defaults, key by key. Lists and tables are written as JSON
(`CLKT_SPEC__LANGUAGES='["en", "fr"]'`). In a table of named tables the name is a part of the path
(`CLKT_AGENTS__PROVIDERS__VLLM__BASE_URL=...`); an array of tables (`[[spec.targets]]`) is set whole, as a JSON list
(`CLKT_SPEC__TARGETS`). API keys never live in the file nor in these variables' values elsewhere: a key's table names the
*variable* that holds it (`api_key_env`, `token_env`, `intake_token_env`).

A value out of bounds, an unknown key, `inf`/`nan` or a bad type is refused at start with one line naming the key.
"""


def _section(t: Table) -> str:
    out = f"## {code(t.header) if t.header else 'Top level'}\n\n"
    if t.description:
        out += escape(t.description) + "\n\n"
    if t.kind == "named":
        out += "One such table per name (none by default).\n\n" if not t.default else ""
    elif t.kind == "array":
        out += f"Default: {code(toml_value(t.default))}. Set from the environment as a whole JSON list.\n\n"
    rows = [
        [code(k.name), escape(k.type), "required" if k.default is None else code(k.default),
         code(t.env(k.name)) if t.env(k.name) else "&mdash;", escape(k.description)]
        for k in t.keys
    ]
    return out + table(["key", "type", "default", "environment", "description"], rows) + "\n"


def render_config(root: type[BaseModel] | None = None) -> str:
    """The page, from `root` (the `Settings` class by default: a test passes a changed copy)."""
    tables = [t for t in settings_tables(root) if t.keys]
    return generated_header("Configuration", _INTRO) + "".join(_section(t) for t in tables)
