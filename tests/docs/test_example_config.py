"""`clkt.example.toml` says "a key left out takes the value shown here": every key of the settings appears in it,
every value shown is the code's default, and loading the file gives exactly the defaults. A default changed in the
code and not in the file fails here (and `python -m clkt.reference --check`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic import Field

from clkt.config import GpuSettings, Settings, load_settings
from clkt.reference._tree import Table, settings_tables
from clkt.reference.example_config import UNSET
from tests.conftest import REPO

EXAMPLE = REPO / "clkt.example.toml"
_HEADER = re.compile(r"^(?:# )?(\[\[?[^\]\s]+\]\]?)\s*$")
_UNSET = re.compile(rf"^# ([A-Za-z_]\w*) =\s+{re.escape(UNSET)}\b")
_KEY = re.compile(r"^(# )?([A-Za-z_]\w*) = (.+)$")


def shown(text: str) -> dict[tuple[str, str], object]:
    """(table header, key) -> the value the file shows (None: shown as unset). Commented key lines count only as
    unset keys or inside a commented-out table (a table of named tables, empty by default)."""
    out: dict[tuple[str, str], object] = {}
    header, commented_table = "", False
    for line in text.splitlines():
        if m := _HEADER.match(line):
            header, commented_table = m.group(1), line.startswith("#")
        elif m := _UNSET.match(line):
            out[(header, m.group(1))] = None
        elif (m := _KEY.match(line)) and (commented_table or not m.group(1)):
            out[(header, m.group(2))] = tomllib.loads(f"v = {m.group(3)}")["v"]
    return out


def _expected(t: Table) -> dict[str, object]:
    if t.kind == "array":
        return dict(t.default[0])
    return {k.name: None if k.default in (None, "unset") else tomllib.loads(f"v = {k.default}")["v"] for k in t.keys}


def mismatches(text: str, tables: list[Table]) -> list[str]:
    """Every key of `tables` missing from `text` or shown with another value than its default."""
    found = shown(text)
    out = []
    for t in tables:
        for key, default in _expected(t).items():
            where = (t.header, key)
            if where not in found:
                out.append(f"{t.header or 'top level'} {key}: missing")
            elif found[where] != default:
                out.append(f"{t.header or 'top level'} {key}: the file shows {found[where]!r}, the code's default is {default!r}")
    return out


def test_every_key_appears_with_the_codes_default() -> None:
    tables = [t for t in settings_tables() if t.keys]
    assert sum(len(t.keys) for t in tables) > 250  # the walk sees every table (sources x 8, gpu, spec.targets, ...)
    assert mismatches(EXAMPLE.read_text(encoding="utf-8"), tables) == []
    assert {("[spec]", "train_languages"), ("[gpu]", "job_timeout_s")} <= set(shown(EXAMPLE.read_text(encoding="utf-8")))


def test_loading_the_example_gives_exactly_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert load_settings(EXAMPLE, environ={}) == load_settings(empty, environ={})


class _Gpu(GpuSettings):
    epochs: int = Field(default=7, ge=1, le=1000)


class _Changed(Settings):
    gpu: _Gpu = Field(default_factory=_Gpu)


def test_a_changed_default_is_caught() -> None:
    found = mismatches(EXAMPLE.read_text(encoding="utf-8"), [t for t in settings_tables(_Changed) if t.keys])
    assert found == ["[gpu] epochs: the file shows 5, the code's default is 7"]


@pytest.mark.parametrize(("edit", "expected"), [
    (("port = 8765", "port = 9000"), "[http] port: the file shows 9000, the code's default is 8765"),
    (("lora_r = 16\n", ""), "[gpu] lora_r: missing"),
])
def test_an_edited_file_is_caught(edit: tuple[str, str], expected: str) -> None:
    text = EXAMPLE.read_text(encoding="utf-8").replace(*edit)
    assert expected in mismatches(text, [t for t in settings_tables() if t.keys])
