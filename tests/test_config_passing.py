"""Configuration is passed, not pulled: only the entry points and the wiring name the whole `Settings`; every
other module receives its section(s) (`clkt.config.SpecSettings`, `DaemonSettings`...) in a constructor.
At the root of tests/ because it is cross-cutting, like `test_layering.py`: it reads every module of the product."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the entry points (run_daemon.py, clkt.process, the CLI commands), the wiring, its start-up check of the whole
# config (clkt.preflight), and the configuration itself
# clkt.reference: the documentation generator reads the settings class (every key and default), no instance
ALLOWED = ("run_daemon", "clkt.process", "clkt.cli", "clkt.services", "clkt.preflight", "clkt.daemon", "clkt.config",
           "clkt.reference")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _names_settings(path: Path) -> list[int]:
    """The lines where `path` imports `Settings` from the configuration (at any depth, TYPE_CHECKING too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clkt.config")
        and any(a.name == "Settings" for a in node.names)
    ]


def test_only_the_entry_points_and_the_wiring_read_the_whole_settings() -> None:
    files = [ROOT / "run_daemon.py", *(p for pkg in ("clkt", "agents", "storage") for p in (ROOT / pkg).rglob("*.py"))]
    readers = {_module(p): lines for p in files if (lines := _names_settings(p))}
    assert {"clkt.services", "clkt.daemon"} <= set(readers)  # the test sees the imports
    outside = {m: lines for m, lines in readers.items() if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}
    assert outside == {}
