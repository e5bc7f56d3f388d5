"""A page's section per pydantic model: its docstring and a table of its fields (the file formats' pages)."""

from __future__ import annotations

import typing
from collections.abc import Iterable

from pydantic import BaseModel

from clkt.reference._fields import field_docs
from clkt.reference._text import code, escape, prose, table

__all__ = ["model_sections", "reachable"]


def _models_in(annotation: typing.Any) -> Iterable[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def reachable(roots: Iterable[type[BaseModel]]) -> list[type[BaseModel]]:
    """`roots` and every model their fields hold (at any depth), each once, roots first, then in order of discovery."""
    found: list[type[BaseModel]] = []
    queue = list(roots)
    while queue:
        model = queue.pop(0)
        if model in found:
            continue
        found.append(model)
        queue += [m for info in model.model_fields.values() for m in _models_in(info.annotation)]
    return found


def model_sections(models: Iterable[type[BaseModel]], *, level: int = 3) -> str:
    """A section per model: `### ModelName`, its docstring, its fields (name, type, default, description)."""
    out = ""
    for model in models:
        out += f"{'#' * level} `{model.__name__}`\n\n" + prose(model.__dict__.get("__doc__"))
        rows = [[code(f.name), escape(f.type), "required" if f.default is None else code(f.default), escape(f.description)]
                for f in field_docs(model)]
        out += table(["field", "type", "default", "description"], rows) + "\n" if rows else "No fields.\n\n"
    return out
