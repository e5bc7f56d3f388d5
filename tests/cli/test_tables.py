"""The CLI's tables never elide what a user must copy or tell apart (snapshot ids, scorer names, p-values,
headers): at 120 columns they fit, at 80 they fold onto more lines, never `…`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.table import Table

import clkt.cli as cli
from clkt.cli import common
from tests.inject._fixtures import SNAPSHOT_ID

WIDTHS = [120, 80]


def _cells(out: str) -> str:
    """Each column's text top to bottom with whitespace removed (a folded value reads whole again), the columns
    joined by `|`."""
    columns: dict[int, str] = {}
    for line in out.splitlines():
        parts = re.split(r"[│┃]", line)[1:-1]
        for i, part in enumerate(parts):
            columns[i] = columns.get(i, "") + re.sub(r"\s", "", part)
    return "|".join(columns[i] for i in sorted(columns))


@pytest.mark.parametrize("width", WIDTHS)
def test_identifiers_and_p_values_fold_never_elide(width: int, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(common.console, "width", width)
    t = Table("snapshot", "scorer", "target A", "target B", "McNemar p", "questions answered in every language",
              title="comparison")
    t.add_row("demo-2025-06-r1-0123456789abcdef", "option-loglik-norm", "gemma-3-270m-injected",
              "smollm2-360m-injected", "0.000001873", "1234")
    capsys.readouterr()
    common.print_table(t)
    out = capsys.readouterr().out
    assert "…" not in out
    cells = _cells(out)
    for value in ("demo-2025-06-r1-0123456789abcdef", "option-loglik-norm", "0.000001873", "McNemarp",
                  "questionsansweredineverylanguage"):
        assert value in cells, out
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_snapshot_list_keeps_its_ids_and_headers(width: int, tiny_store: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tiny_store
    monkeypatch.setattr(common.console, "width", width)
    capsys.readouterr()
    cli.main(["snapshot", "list", "--config", str(cfg)])
    out = capsys.readouterr().out
    assert "…" not in out, out
    cells = _cells(out)
    for value in (SNAPSHOT_ID, "entities", "questions", "built(UTC)", "2025-06"):
        assert value in cells, out
    if width >= 120:
        assert SNAPSHOT_ID in out  # on one line where it fits
