"""The checks that hold the hand-written documentation to the code (issue 49 part 3): every `clkt` command in a
fenced block parses against the real command line, every configuration key named exists in the settings' models,
every default shown equals the model's, every repository path named exists, and every TOML block loads.

The pages: README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**/*.md (`doc_pages`). Each check reads Markdown
text (`Page`; parsed by markdown-it-py, which rich already brings) and returns `Finding`s naming the file, the line
and what is wrong; nothing runs a command. The conventions a page follows so that its statements are checked are in CONTRIBUTING.md
("Documentation"); in short:

- a command: a line of a fenced block (no language, `bash`, `sh`, `shell`, `console`) that starts with `clkt`
  (also `$ clkt`, `.venv/bin/clkt`, `python -m clkt`), alone or in a pipeline; a synopsis may write optional parts in
  `[...]`, alternatives as `a|b` (a pipe is written with spaces around it) and a description after two spaces;
- a key: `` `[gpu] job_timeout_s` `` or `` `gpu.job_timeout_s` `` (the section named; `<name>` stands for any name);
- a default: the key followed by `(default VALUE` or `defaults to VALUE` (VALUE as TOML, or bare);
- a path: a backticked token whose first part is a top-level entry of the repository (`clkt/...`, `tests/...`,
  `pyproject.toml`); `<name>` and `*` match any name; relative links must lead to a file;
- a ```toml block loads into the settings (unknown keys refused) unless the line before it is
  `<!-- drift: skip -->`; after `<!-- drift: defaults -->` each of its values must equal the default.

Pages whose first line is a `<!-- generated ... -->` comment are written by `python -m clkt.reference` from the code
and are not scanned.
"""

from __future__ import annotations

import copy
import math
import re
import shlex
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from functools import cache
from pathlib import Path, PurePath
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer
import typer.main
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pydantic import BaseModel, TypeAdapter, ValidationError

from clkt.config.loader import load_settings
from clkt.config.settings import Settings
from clkt.errors import ConfigError

__all__ = [
    "ROOT",
    "Finding",
    "Page",
    "check_commands",
    "check_defaults",
    "check_keys",
    "check_links",
    "check_paths",
    "check_toml",
    "doc_pages",
    "lookup_key",
]

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGS = frozenset({"", "bash", "sh", "shell", "console", "text"})
SKIP_MARK = "<!-- drift: skip -->"
DEFAULTS_MARK = "<!-- drift: defaults -->"
# top-level entries a path may start with even when missing (so a path into a removed folder is reported)
KNOWN_TOP = frozenset({
    "clkt", "storage", "agents", "tests", "bench", "docs", ".ci", "README.md", "CONTRIBUTING.md", "CHANGELOG.md",
    "LICENSE", "NOTICE", "CITATION.cff", "Makefile", "pyproject.toml", "clkt.example.toml", "run_daemon.py",
    "mkdocs.yml",
})
# top-level entries that are not the repository's (the environment, the user's data, build outputs)
NOT_REPO = frozenset({".git", ".venv", "clkt-data", "snapshots", "build", "dist", "site"})
FILE_EXTENSIONS = frozenset({
    "py", "toml", "md", "json", "jsonl", "yml", "yaml", "sh", "cfg", "csv", "txt", "gz", "html", "png", "db", "cff",
    "tar", "parquet", "ini", "lock", "svg", "pdf", "log", "npz", "bin", "safetensors", "j2", "css", "js",
})


@dataclass(frozen=True, kw_only=True, order=True)
class Finding:
    """One statement of a page that disagrees with the code."""

    file: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


@dataclass(frozen=True, kw_only=True)
class Page:
    """A Markdown page: its name (as shown in findings), its text and the folder its relative links start from."""

    name: str
    text: str
    base: Path = ROOT

    @classmethod
    def read(cls, path: Path) -> Page:
        return cls(name=str(path.relative_to(ROOT)), text=path.read_text(encoding="utf-8"), base=path.parent)


def is_generated(text: str) -> bool:
    """A page written by `python -m clkt.reference`: its first line is a `<!-- generated ... -->` comment."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    return re.match(r"<!--\s*generated\b", first, re.IGNORECASE) is not None


def doc_pages(root: Path = ROOT) -> list[Path]:
    """The hand-written pages: README.md, CONTRIBUTING.md, CHANGELOG.md and every docs/**/*.md not generated."""
    pages = [root / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md") if (root / name).exists()]
    pages += sorted(p for p in (root / "docs").rglob("*.md") if not is_generated(p.read_text(encoding="utf-8")))
    return pages


# --- Markdown reading -------------------------------------------------------------------------------------------


@cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _tokens(text: str) -> list[Token]:
    return _markdown().parse(text)


@dataclass(frozen=True, kw_only=True)
class _Fence:
    lang: str
    body: str
    first_line: int  # 1-based line of the body's first line
    mark: str  # the line before the opening fence, stripped


def _fences(page: Page) -> Iterator[_Fence]:
    lines = page.text.split("\n")
    for tok in _tokens(page.text):
        if tok.type == "fence" and tok.map is not None:
            start = tok.map[0]
            mark = lines[start - 1].strip() if start > 0 else ""
            yield _Fence(lang=tok.info.strip().split(" ")[0].lower(), body=tok.content, first_line=start + 2, mark=mark)


def _inline_code(page: Page) -> Iterator[tuple[int, str, str]]:
    """(line, code, the rest of its line after the code span) of every inline code span outside fenced blocks."""
    lines = page.text.split("\n")
    for tok in _tokens(page.text):
        if tok.type != "inline" or tok.map is None or not tok.children:
            continue
        first, end = tok.map
        block = "\n".join(lines[first:end])
        cursor = 0
        for child in tok.children:
            if child.type != "code_inline":
                continue
            words = [re.escape(w) for w in child.content.split()]
            tick = re.escape(child.markup)
            m = re.compile(tick + r"\s*" + r"\s+".join(words) + r"\s*" + tick).search(block, cursor)
            if m is None:
                yield first + 1, child.content, ""
                continue
            cursor = m.end()
            line_end = block.find("\n", m.end())
            yield first + 1 + block.count("\n", 0, m.start()), child.content, block[m.end():None if line_end < 0 else line_end]


def _links(page: Page) -> Iterator[tuple[int, str]]:
    for tok in _tokens(page.text):
        if tok.type != "inline" or tok.map is None or not tok.children:
            continue
        for child in tok.children:
            href = child.attrGet("href") if child.type == "link_open" else None
            if isinstance(href, str):
                line = next((n + 1 for n in range(*tok.map) if f"({href}" in page.text.split("\n")[n]), tok.map[0] + 1)
                yield line, href


# --- commands -----------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"^(<.*>|[A-Z][A-Z0-9_]*(?![a-z])\S*|\$\S+|\.\.\.|…)$")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REDIRECT = re.compile(r"^\d*(>>?|<)&?\d*$")
_REDIRECT_ATTACHED = re.compile(r"^\d*(>>?|<)&?[^<>\s]+$")
_SUBSHELL = re.compile(r"\$\(([^()]*)\)")


def is_placeholder(value: str) -> bool:
    """A value written for the reader to fill in: `<snapshot-id>`, `ID`, `FILE.csv`, `YYYY-MM-DD`, `$VAR`."""
    return _PLACEHOLDER.match(value) is not None


def _cut_description(line: str) -> str:
    """The line up to a description written after two spaces (outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif line.startswith("  ", i) and line[:i].strip():
            return line[:i]
    return line


def _synopsis(line: str) -> str:
    """A synopsis line as one command: optional parts `[...]` kept (their first alternative), `a|b` as `a`."""
    for _ in range(4):  # nested brackets, innermost first
        line = re.sub(r"\[(?=[-A-Z<])([^\[\]]*)\]", lambda m: m.group(1).split(" | ")[0], line)
    line = re.sub(r"(?<=[^\s|])\|[^\s|]+", "", line)  # `native|reference|hf` -> `native`
    return re.sub(r"\s(\.\.\.|…)(?=\s|$)", " ", line)


def _segments(line: str) -> Iterator[str]:
    """The simple commands of a shell line: its `$(...)` substitutions and the parts between `|`, `&&`, `||`, `;`."""
    for inner in _SUBSHELL.findall(line):
        yield from _segments(inner)
    yield from (s.strip() for s in re.split(r"\s+\|\|?\s+|\s*&&\s*|\s*;\s+|\s*;$", line) if s.strip())


def _clkt_args(segment: str) -> list[str] | None:
    """The arguments of a `clkt` invocation in one simple command, or None when it is not one."""
    try:
        words = shlex.split(segment, comments=True)
    except ValueError:
        return None
    while words and _ENV_ASSIGN.match(words[0]):
        words = words[1:]
    if words and PurePath(words[0]).name == "clkt":
        args = words[1:]
    elif len(words) >= 3 and PurePath(words[0]).name.startswith("python") and words[1:3] == ["-m", "clkt"]:
        args = words[3:]
    else:
        return None
    out: list[str] = []
    skip = False
    for w in args:
        if skip:
            skip = False
        elif _REDIRECT.match(w):
            skip = True
        elif not _REDIRECT_ATTACHED.match(w):
            out.append(w)
    return out


def commands_of(page: Page) -> Iterator[tuple[int, str, list[str]]]:
    """(line, the command as written, its arguments) of every `clkt` command in the page's shell blocks."""
    for fence in _fences(page):
        if fence.lang not in SHELL_LANGS or fence.mark == SKIP_MARK:
            continue
        pending, start = "", 0
        for offset, raw in enumerate(fence.body.split("\n")):
            text = raw.strip()
            if not pending:
                start = fence.first_line + offset
            if text.endswith("\\"):
                pending += text[:-1].rstrip() + " "
                continue
            line, pending = pending + text, ""
            line = re.sub(r"^\$\s+", "", line)
            line = _synopsis(_cut_description(line))
            for segment in _segments(line):
                args = _clkt_args(segment)
                if args is not None:
                    yield start, segment, args


@cache
def _cli() -> Any:
    from clkt.cli import _register_areas, app

    _register_areas()
    return typer.main.get_command(app)


def _lenient(cmd: Any, names: set[str]) -> Any:
    """`cmd` with the parameters `names` taking any value (their placeholder values are not converted)."""
    if not names:
        return cmd
    out = copy.copy(cmd)
    params = []
    for p in cmd.params:
        if p.name in names:
            p = copy.copy(p)
            p.process_value = lambda _ctx, value: value
        params.append(p)
    out.params = params
    return out


def _raw_values(cmd: Any, name: str, args: list[str], parent: Any) -> dict[str, Any]:
    """The values given to each parameter as written (no conversion): `param name -> values`."""
    ctx = cmd.make_context(name, list(args), parent=parent, resilient_parsing=True)
    opts, _largs, _order = cmd.make_parser(ctx).parse_args(args=list(args))
    return dict(opts)


def _parse_leaf(cmd: Any, name: str, args: list[str], parent: Any, *, helping: bool) -> None:
    lenient: set[str] = set()
    while True:
        try:
            cmd_ = _lenient(cmd, lenient)
            cmd_.make_context(name, list(args), parent=parent)
            return
        except typer.TyperException as e:
            param = getattr(e, "param", None)
            kind = type(e).__name__
            if kind == "MissingParameter" and helping:
                return
            if kind != "BadParameter" or param is None or param.name in lenient:
                raise
            raw = _raw_values(cmd, name, args, parent).get(param.name)
            values = raw if isinstance(raw, list) else [raw]
            if not values or not all(isinstance(v, str) and is_placeholder(v) for v in values):
                raise
            lenient.add(param.name)


def parse_command(args: Sequence[str], *, partial: bool = False) -> str | None:
    """None when `clkt <args>` parses against the command line (nothing runs), else why not. `partial`: a command
    named in prose, whose arguments may be left out (`clkt snapshot publish`)."""
    words = list(args)
    helping = partial or any(w in ("--help", "--version") for w in words)
    words = [w for w in words if w not in ("--help", "--version")]
    cmd, name, parent = _cli(), "clkt", None
    try:
        while hasattr(cmd, "resolve_command"):
            if not words:
                return None if (helping or cmd.no_args_is_help) else "a command is missing"
            ctx = cmd.make_context(name, words, parent=parent)
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
            if not rest:
                return None if (helping or cmd.no_args_is_help) else "a command is missing"
            name, cmd, words = cmd.resolve_command(ctx, rest)
            parent = ctx
        _parse_leaf(cmd, name, words, parent, helping=helping)
    except typer.TyperException as e:
        msg = " ".join((e.format_message() if hasattr(e, "format_message") else str(e)).split())
        if partial and words and words[-1].startswith("-") and msg.endswith("requires an argument."):
            return None  # prose naming an option: `clkt leaderboard --compare-strategies`
        return msg
    return None


def inline_commands_of(page: Page) -> Iterator[tuple[int, str, list[str]]]:
    """(line, the command as written, its arguments) of every inline code span that is a `clkt` command."""
    for line, code, _rest in _inline_code(page):
        text = re.sub(r"^\$\s+", "", code.strip())
        if not re.match(r"^(\S*/)?clkt\s", text):
            continue
        for segment in _segments(_synopsis(text)):
            args = _clkt_args(segment)
            if args is not None:
                yield line, segment, args


def check_commands(page: Page) -> list[Finding]:
    """Every `clkt` command of the page parses against the command line: those of its shell blocks whole, those
    named in its prose (`` `clkt snapshot publish` ``) as far as they are written."""
    out = []
    for partial, found in ((False, commands_of(page)), (True, inline_commands_of(page))):
        for line, written, args in found:
            why = parse_command(args, partial=partial)
            if why is not None:
                out.append(Finding(file=page.name, line=line, what=f"`{written}`: {why}"))
    return out


# --- configuration keys and defaults --------------------------------------------------------------------------

_MISSING: Any = object()
_BRACKET_KEY = re.compile(r"^\[\[?([a-z_][a-z0-9_.<>-]*)\]\]?(?:\s+([a-z_][a-z0-9_.<>]*))?(?:\s*=.*)?$")
_DOTTED_KEY = re.compile(r"^([a-z_][a-z0-9_]*(?:\.(?:[a-z_][a-z0-9_]*|<[a-z_-]+>))+)(?:\s*=.*)?$")


@dataclass(frozen=True, kw_only=True)
class KeyInfo:
    """A configuration key found in the settings: its dotted path and its default (`has_default` False: none)."""

    path: str
    has_default: bool
    default: Any
    annotation: Any  # what a value of it must be (the field's type and constraints)


def _unwrap(tp: Any) -> Any:
    """The type behind `X | None` and `Annotated[X, ...]`."""
    while True:
        origin = get_origin(tp)
        if origin in (Union, UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        elif origin is Annotated:
            tp = get_args(tp)[0]
        else:
            return tp


def _model(tp: Any) -> type[BaseModel] | None:
    tp = _unwrap(tp)
    if get_origin(tp) in (list, tuple, set, frozenset):
        tp = _unwrap(get_args(tp)[0])
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _key_allowed(key_type: Any, part: str) -> bool:
    key_type = _unwrap(key_type)
    if isinstance(key_type, type) and issubclass(key_type, Enum):
        return part in {m.value for m in key_type}
    if get_origin(key_type) is Literal:
        return part in get_args(key_type)
    return True


def _field_default(field: Any) -> Any:
    if field.is_required():
        return _MISSING
    return field.get_default(call_default_factory=True)


@dataclass(frozen=True, kw_only=True)
class _At:
    """Where `lookup_key` stands: the type there, its default (when known), its value's type, a `<name>` passed."""

    node: Any
    default: Any
    annotation: Any
    wild: bool = False


def _into_model(at: _At, model: type[BaseModel], part: str, where: str) -> _At | str:
    if part.startswith("<"):
        subs = [f for f in model.model_fields.values() if _model(f.annotation) is not None]
        if not subs:
            return f"`{part}` stands for a name, but {where} has keys, not names"
        return _At(node=subs[0].annotation, default=_MISSING, annotation=subs[0].annotation, wild=True)
    field = model.model_fields.get(part)
    if field is None:
        return f"`{part}` is not a key of {where} (known: {', '.join(sorted(model.model_fields))})"
    default = getattr(at.default, part) if isinstance(at.default, BaseModel) else _field_default(field)
    annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    return _At(node=field.annotation, default=default, annotation=annotation, wild=at.wild)


def _into_table(at: _At, part: str, where: str) -> _At | str:
    mapping = _unwrap(at.node)
    if get_origin(mapping) not in (dict, Mapping):
        return f"{where} is a value, not a table"
    key_type, value_type = get_args(mapping)
    wild = part.startswith("<")
    if not wild and not _key_allowed(key_type, part):
        return f"`{part}` is not a name {where} takes"
    default = at.default.get(part, _MISSING) if isinstance(at.default, dict) else _MISSING
    return _At(node=value_type, default=default, annotation=value_type, wild=at.wild or wild)


def lookup_key(dotted: str, root: type[BaseModel] = Settings) -> KeyInfo | str:
    """The key `a.b.c` of the settings (`<name>` parts stand for any name), or why it is not one."""
    parts = dotted.split(".")
    at: _At | str = _At(node=root, default=_MISSING, annotation=root)
    for i, part in enumerate(parts):
        assert isinstance(at, _At)
        where = ".".join(parts[:i]) or "the top level"
        model = _model(at.node)
        at = _into_model(at, model, part, where) if model is not None else _into_table(at, part, where)
        if isinstance(at, str):
            return f"`{dotted}` is not a configuration key: {at}"
    assert isinstance(at, _At)
    has_default = at.default is not _MISSING and not at.wild  # a `<name>`'s default may differ by name
    return KeyInfo(path=dotted, has_default=has_default, default=at.default, annotation=at.annotation)


@cache
def _sections() -> frozenset[str]:
    return frozenset(n for n, f in Settings.model_fields.items() if _model(f.annotation) is not None)


def key_named(code: str) -> str | None:
    """The dotted key an inline code span names by the convention (`[gpu] epochs`, `gpu.epochs`), or None."""
    code = code.strip()
    m = _BRACKET_KEY.match(code)
    if m:
        section, key = m.group(1), m.group(2)
        if section.split(".")[0] not in _sections():
            return None
        return f"{section}.{key}" if key else section
    m = _DOTTED_KEY.match(code)
    if m:
        parts = m.group(1).split(".")
        if parts[0] in _sections() and parts[-1] not in FILE_EXTENSIONS:
            return m.group(1)
    return None


def _value_finding(info: KeyInfo, code: str) -> str | None:
    """Why the value of `key = value` (as an inline code span writes it) is not one the key takes, or None. The
    value alone is checked against the key's type and bounds (a rule joining two keys needs the whole file)."""
    text = code.split("=", 1)[1].strip()
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return f"`{code}`: `{text}` is not a TOML value"
    try:
        TypeAdapter(info.annotation).validate_python(value)
    except ValidationError as e:
        return f"`{code}`: not a value of `{info.path}`: {e.errors()[0]['msg']}"
    return None


def check_keys(page: Page) -> list[Finding]:
    """Every configuration key the page names (by the convention) exists in the settings, and a value given with it
    (`` `[gpu] engine = "ray"` ``) loads."""
    out = []
    for line, code, _rest in _inline_code(page):
        key = key_named(code)
        if key is None:
            continue
        found = lookup_key(key)
        why = found if isinstance(found, str) else _value_finding(found, code) if "=" in code else None
        if why is not None:
            out.append(Finding(file=page.name, line=line, what=why))
    return out


_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
_DEFAULT_AFTER = re.compile(
    r"^\s*(?:\(default:?\s+|,?\s*defaults? to\s+)"
    r"(`[^`]*`|-?\d[\d_.]*(?:e-?\d+)?(?:\s*(?:KiB|MiB|GiB|KB|MB|GB))?|on|off|true|false|none|unset)(?=[\s,;:)]|$)"
)
# "`[snapshot] cadence`, monthly by default", "`[gpu] epochs` is `5` by default"
_BY_DEFAULT = re.compile(r"^\s*(?:,|\s+is)\s+(`[^`]*`|[A-Za-z0-9_.-]+(?:\s*(?:KiB|MiB|GiB|KB|MB|GB))?)\s+by default\b")


def doc_value(text: str) -> Any:
    """A value as a page writes it: TOML (`3600`, `"x"`, `[0]`, `true`), `on`/`off`, a size (`64 MiB`), or text."""
    text = text.strip().strip("`")
    words = {"on": True, "off": False, "true": True, "false": False, "none": None, "unset": None}
    if text.lower() in words:
        return words[text.lower()]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|KB|MB|GB)", text)
    if m:
        return float(m.group(1)) * _UNITS[m.group(2)]
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    return value


def same_value(shown: Any, default: Any) -> bool:
    """Whether a value shown equals the default (numbers by value, paths and enums as text)."""
    shown, default = _plain(shown), _plain(default)
    if isinstance(shown, bool) or isinstance(default, bool):
        return shown is default
    if isinstance(shown, (int, float)) and isinstance(default, (int, float)):
        return math.isclose(shown, default, rel_tol=1e-9)
    if isinstance(shown, list) and isinstance(default, list):
        return len(shown) == len(default) and all(same_value(a, b) for a, b in zip(shown, default, strict=True))
    if isinstance(shown, dict) and isinstance(default, dict):
        return shown.keys() == default.keys() and all(same_value(shown[k], default[k]) for k in shown)
    return bool(shown == default)


def _default_finding(page: Page, line: int, key: str, shown_text: str) -> Finding | None:
    found = lookup_key(key)
    if isinstance(found, str) or "<" in key:
        return None  # check_keys reports an unknown key; a `<name>`'s default may differ by name
    shown = doc_value(shown_text)
    if isinstance(found.default, Mapping) and not isinstance(shown, Mapping):
        return None  # a table of names (`[agents] output_modes`): the value shown is each name's, when unset
    if not found.has_default:
        return Finding(file=page.name, line=line, what=f"`{key}` has no default, but the page shows one ({shown_text})")
    if same_value(shown, found.default):
        return None
    return Finding(file=page.name, line=line,
                   what=f"`{key}`: the page shows the default {shown_text}, the code's is {_plain(found.default)!r}")


def _all_keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every key under `model` (a table of names as `<name>`), depth first."""
    for name, field in model.model_fields.items():
        sub = _model(field.annotation)
        if sub is not None and get_origin(_unwrap(field.annotation)) not in (list, tuple):
            yield from _all_keys(sub, f"{prefix}{name}.")
            continue
        yield f"{prefix}{name}"
        tp = _unwrap(field.annotation)
        if get_origin(tp) in (dict, Mapping) and _model(get_args(tp)[1]) is not None:
            yield from _all_keys(_model(get_args(tp)[1]) or BaseModel, f"{prefix}{name}.<name>.")


@cache
def _unique_names() -> dict[str, str]:
    """A key's last part -> the key, for the names only one key has (`hold_back_periods` -> `publish....`)."""
    by_name: dict[str, list[str]] = {}
    for key in _all_keys(Settings):
        by_name.setdefault(key.rsplit(".", 1)[-1], []).append(key)
    return {name: keys[0] for name, keys in by_name.items() if len(keys) == 1}


def default_key(code: str) -> str | None:
    """The key whose default a code span followed by `(default ...` shows: a named key, or a bare name that only
    one key has (`hold_back_periods`)."""
    key = key_named(code)
    if key is None and re.fullmatch(r"[a-z_][a-z0-9_]*", code.strip()):
        key = _unique_names().get(code.strip())
    return key


def check_defaults(page: Page) -> list[Finding]:
    """Every default the page shows for a key (by the convention) equals the model's."""
    out = []
    for line, code, rest in _inline_code(page):
        key = default_key(code)
        m = (_DEFAULT_AFTER.match(rest) or _BY_DEFAULT.match(rest)) if key is not None else None
        if key is None or m is None:
            continue
        finding = _default_finding(page, line, key, m.group(1))
        if finding is not None:
            out.append(finding)
    return out


# --- TOML blocks --------------------------------------------------------------------------------------------------


def _leaves(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in data.items():
        if isinstance(v, dict):
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def load_fragment(text: str) -> str | None:
    """None when a TOML fragment loads into the settings through the real loader, else the loader's one line."""
    with tempfile.TemporaryDirectory(prefix="clkt-drift-") as tmp:
        path = Path(tmp) / "fragment.toml"
        path.write_text(text, encoding="utf-8")
        try:
            load_settings(path, environ={})
        except ConfigError as e:
            return str(e).replace(str(path), "the block")
    return None


def check_toml(page: Page) -> list[Finding]:
    """Every ```toml block loads into the settings; after `<!-- drift: defaults -->` its values are the defaults."""
    out = []
    for fence in _fences(page):
        if fence.lang != "toml" or fence.mark == SKIP_MARK:
            continue
        why = load_fragment(fence.body)
        if why is not None:
            out.append(Finding(file=page.name, line=fence.first_line, what=f"TOML block does not load: {why}"))
            continue
        if fence.mark != DEFAULTS_MARK:
            continue
        data = tomllib.loads(fence.body)
        for key, value in _leaves(data):
            found = lookup_key(key)
            if isinstance(found, KeyInfo) and not (found.has_default and same_value(value, found.default)):
                shown = _plain(found.default) if found.has_default else "none"
                out.append(Finding(file=page.name, line=fence.first_line,
                                   what=f"`{key} = {value!r}` in a block of defaults: the code's default is {shown!r}"))
    return out


# --- paths and links ----------------------------------------------------------------------------------------------


def _top_entries(root: Path) -> frozenset[str]:
    present = {p.name for p in root.iterdir() if not p.name.endswith(".egg-info")}
    present = {n for n in present if not n.startswith(".") or n in (".ci", ".github")}
    return frozenset((present | KNOWN_TOP) - NOT_REPO)


def repo_path(code: str, root: Path = ROOT) -> str | None:
    """The repository path an inline code span names (as a glob), or None when it names none."""
    token = code.strip().split("::")[0]
    token = re.sub(r":\d+(-\d+)?$", "", token)
    if not re.fullmatch(r"[A-Za-z0-9_.\-/<>*]+", token) or token.startswith("/"):
        return None
    first = token.split("/")[0]
    if first not in _top_entries(root):
        return None
    if "/" not in token and "." not in token and first not in KNOWN_TOP:
        return None
    if first == "docs" and PurePath(token).suffix not in (".md", ".yml"):
        return None  # a snapshot's folder has a `docs/` too (`docs/`, `docs/<lang>.jsonl`): only pages are checked
    return re.sub(r"<[^<>/]*>", "*", token.rstrip("/"))


def _exists(pattern: str, root: Path) -> bool:
    if "*" in pattern:
        return next(iter(root.glob(pattern)), None) is not None
    return (root / pattern).exists()


def check_paths(page: Page, root: Path = ROOT) -> list[Finding]:
    """Every repository path the page names in backticks exists (`<name>` and `*` match any name)."""
    out = []
    for line, code, _rest in _inline_code(page):
        pattern = repo_path(code, root)
        if pattern is not None and not _exists(pattern, root):
            out.append(Finding(file=page.name, line=line, what=f"`{code}`: no such path in the repository"))
    return out


def check_links(page: Page) -> list[Finding]:
    """Every relative link of the page leads to a file or folder (anchors and web addresses aside)."""
    out = []
    for line, href in _links(page):
        target = href.split("#")[0].split("?")[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            continue
        if not (page.base / target).exists():
            out.append(Finding(file=page.name, line=line, what=f"link `{href}`: no such file"))
    return out


CHECKS: dict[str, Callable[[Page], list[Finding]]] = {
    "commands": check_commands,
    "keys": check_keys,
    "defaults": check_defaults,
    "toml": check_toml,
    "paths": check_paths,
    "links": check_links,
}
