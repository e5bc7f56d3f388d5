"""What a generated page says about a pydantic model's fields: each field's type, default and description.

A field's description is its `Field(description=...)` when it has one, else the comments the code keeps beside it:
the comment lines right above its declaration and the comment at the end of it (read from the class's source with
`tokenize`), else nothing. Defaults are written as TOML values (what a config file would hold)."""

from __future__ import annotations

import ast
import enum
import inspect
import io
import re
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

__all__ = ["FieldDoc", "body_comments", "field_docs", "model_comments", "module_comments", "toml_value", "type_name"]

_HEADING = re.compile(r"^--.*--$")  # `# -- where GPU jobs run --`: a heading of the fields below, not a description


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldDoc:
    """One field as a page shows it."""

    name: str
    type: str
    default: str | None  # a TOML value; None: required (no default)
    description: str


def _class_source(cls: type) -> str | None:
    try:
        return textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # a class made at run time (`create_model`) has no source
        return None


def _assigned(node: ast.stmt) -> str | None:
    """The name a statement declares (`x: int = 1`, `X = 1`), else None."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def body_comments(source: str, body: list[ast.stmt]) -> dict[str, str]:
    """The comments of each name `body` (statements of `source`) declares: the lines right above it, then its end
    comment; a heading comment (`# -- ... --`) left out."""
    comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT}
    lines = source.splitlines()
    out: dict[str, str] = {}
    for node in body:
        name = _assigned(node)
        if name is None:
            continue
        above: list[str] = []
        line = node.lineno - 1
        while line - 1 >= 0 and lines[line - 1].strip().startswith("#"):
            above.insert(0, comments.get(line, ""))
            line -= 1
        after = [comments[n] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if n in comments]
        head, tail = " ".join(c for c in above if c and not _HEADING.match(c)), " ".join(c for c in after if c)
        joint = ": " if head and tail and head[-1] not in ".:;)" else " "  # a group's comment above, the key's own after
        out[name] = joint.join(x for x in (head, tail) if x)
    return out


@cache
def model_comments(cls: type) -> dict[str, str]:
    """The comments of each field declared in `cls`'s own body (`body_comments`)."""
    source = _class_source(cls)
    if source is None:
        return {}
    return body_comments(source, list(getattr(ast.parse(source).body[0], "body", [])))


@cache
def module_comments(module: types.ModuleType) -> dict[str, str]:
    """The comments of each module-level name of `module` (`body_comments`)."""
    source = inspect.getsource(module)
    return body_comments(source, ast.parse(source).body)


def _describe(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """The field's description, else the comment of its nearest declaration in `model`'s MRO that has one (a
    source's class re-declares `base_url` with its own default; the base class says what it is)."""
    if info.description:
        return info.description
    for cls in model.__mro__:
        if cls is BaseModel:
            break
        if model_comments(cls).get(name):  # only a declaration in the class's own body has one
            return model_comments(cls)[name]
    return ""


def _literal(args: tuple[Any, ...]) -> str:
    return " | ".join(toml_value(a) for a in args)


def type_name(annotation: Any) -> str:
    """A reader's name for a type: `int`, `"a" | "b"`, `list[str]`, `table of domain -> int`, `X | None`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return _literal(args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is list or origin is tuple:
        return f"list[{type_name(args[0])}]" if args else "list"
    if origin is dict:
        return f"table of {type_name(args[0])} -> {type_name(args[1])}" if args else "table"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _literal(tuple(m.value for m in annotation))
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_value(key)


def toml_value(value: Any) -> str:
    """`value` (JSON-like data, or a date) as a TOML value written inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return toml_value(value.value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items() if v is not None]  # TOML has no null
        return "{ " + ", ".join(items) + " }" if items else "{}"
    return toml_value(str(value))


def default_data(info: FieldInfo) -> Any:
    """A field's default as JSON-like data (`Path` as text, enums as their values, models as tables)."""
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return TypeAdapter(typing.Any).dump_python(value, mode="json")


def field_docs(model: type[BaseModel]) -> list[FieldDoc]:
    """Every field of `model` that a config file can set (not those excluded from dumps), in declaration order."""
    out = []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        default = None if info.is_required() else default_data(info)
        out.append(FieldDoc(
            name=name, type=type_name(info.annotation), description=_describe(model, name, info),
            default=None if info.is_required() else ("unset" if default is None else toml_value(default)),
        ))
    return out
