"""A page's section per pydantic model: its docstring and a table of its fields (the file formats' pages)."""

from __future__ import annotations

import re
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


def _linked(kind: str, names: set[str]) -> str:
    """A field's type, escaped, each model of the page in it a link to its section (`#modelname`)."""
    return re.sub(r"\b[A-Z]\w*\b", lambda m: f"[{m[0]}](#{m[0].lower()})" if m[0] in names else m[0], escape(kind))


def model_sections(models: Iterable[type[BaseModel]], *, level: int = 3) -> str:
    """A section per model: `### ModelName`, its docstring, its fields (name, type, default, description)."""
    models = list(models)
    names = {m.__name__ for m in models}
    out = ""
    for model in models:
        out += f"{'#' * level} `{model.__name__}`\n\n" + prose(model.__dict__.get("__doc__"))
        rows = [[code(f.name), _linked(f.type, names), "required" if f.default is None else code(f.default),
                 escape(f.description)] for f in field_docs(model)]
        out += table(["field", "type", "default", "description"], rows) + "\n" if rows else "No fields.\n\n"
    return out
