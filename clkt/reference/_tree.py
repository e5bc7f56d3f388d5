"""The settings as a tree of TOML tables: every section of `clkt.config.Settings` with its own keys, in order.

Both the configuration reference (`config_page`) and `clkt.example.toml` (`example_config`) walk it, so the page
and the file name the same keys with the same defaults. A field whose type is a model is a table of its own; a
table of models (`agents.providers`) is one table per name; a list of models (`spec.targets`) an array of tables."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from clkt.reference._fields import FieldDoc, default_data, field_docs

__all__ = ["Table", "settings_tables"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    """One TOML table of the settings and its own keys (its sub-tables are tables of their own)."""

    path: tuple[str, ...]  # ("agents", "providers", "<name>"); () for the top level
    model: type[BaseModel]
    keys: tuple[FieldDoc, ...]
    kind: typing.Literal["table", "named", "array"]  # a table, one table per name, an array of tables
    default: Any = None  # of a "named"/"array" table: the container's default (JSON-like data)
    description: str = ""  # the field's description in its parent, else the model's docstring

    @property
    def header(self) -> str:
        """`[http]`, `[agents.providers.<name>]`, `[[spec.targets]]`; "" for the top level."""
        if not self.path:
            return ""
        dotted = ".".join(self.path)
        return f"[[{dotted}]]" if self.kind == "array" else f"[{dotted}]"

    def env(self, key: str) -> str | None:
        """The environment variable that sets `key` of this table (None: inside an array, only the whole list)."""
        if self.kind == "array":
            return None
        return "CLKT_" + "__".join([*self.path, key]).upper()


def _nested(info: FieldInfo) -> tuple[str, type[BaseModel]] | None:
    """("table" | "named" | "array", model) when the field holds a model, a table of models or a list of them."""
    ann = info.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "table", ann
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    last = args[-1] if args else None
    if isinstance(last, type) and issubclass(last, BaseModel):
        if origin is dict:
            return "named", last
        if origin is list:
            return "array", last
    return None


def _doc(model: type[BaseModel]) -> str:
    own = model.__dict__.get("__doc__") or ""
    return " ".join(own.split())


def _walk(model: type[BaseModel], path: tuple[str, ...], out: list[Table], **table: Any) -> None:
    nested = {name: _nested(info) for name, info in model.model_fields.items()}
    keys = tuple(f for f in field_docs(model) if nested[f.name] is None)
    out.append(Table(path=path, model=model, keys=keys, description=table.pop("description", "") or _doc(model), **table))
    docs = {f.name: f.description for f in field_docs(model)}
    for name, info in model.model_fields.items():
        found = nested[name]
        if found is None:
            continue
        kind, sub = found
        if kind == "table":
            _walk(sub, (*path, name), out, kind="table", description=docs[name])
        else:
            where = (*path, name, "<name>") if kind == "named" else (*path, name)
            _walk(sub, where, out, kind=kind, default=default_data(info), description=docs[name])


def settings_tables(root: type[BaseModel] | None = None) -> list[Table]:
    """Every table of `root` (the `Settings` class by default), depth first in declaration order."""
    if root is None:
        from clkt.config import Settings

        root = Settings
    out: list[Table] = []
    _walk(root, (), out, kind="table")
    return out
