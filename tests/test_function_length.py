"""No function of the product is longer than `MAX_LINES` lines (README, Development): a function that does one
thing reads on one screen. Counted from its `def` line to its last line, decorators aside, in `clkt/`, `agents/`
and `storage/` (the migrations included: a generated migration is split into groups of tables)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clkt", "agents", "storage")
MAX_LINES = 80


def long_functions(root: Path, *, limit: int = MAX_LINES) -> list[str]:
    """`path:line name (n lines)` of every function under `root`'s packages longer than `limit` lines."""
    found = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    if n > limit:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_function_is_longer_than_the_limit() -> None:
    assert long_functions(ROOT) == []


def test_a_long_function_is_found(tmp_path: Path) -> None:
    (tmp_path / "clkt").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))  # with its def line: one line too many
    (tmp_path / "clkt" / "long.py").write_text(f"async def f() -> None:\n{body}\n\ndef g() -> None:\n    pass\n")
    assert long_functions(tmp_path) == [f"clkt/long.py:1 f ({MAX_LINES + 1} lines)"]
    assert long_functions(tmp_path, limit=MAX_LINES + 1) == []
