"""The documentation generated from the code: the reference pages, the benchmarks page and `clkt.example.toml`.

`python -m clkt.reference --write` writes every generated file; `--check` writes nothing and exits 1 naming each
file that differs from what the code gives now (CI runs it in `make docs`, and tests/docs keep the committed files
equal to a fresh generation). Output is deterministic: nothing depends on the time or the machine."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GENERATED", "Generated", "generate", "stale", "write"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Generated:
    """One generated file: its path under the repository root and the function that renders it (`module.function`,
    imported when it runs; given the repository root when `needs_root`)."""

    path: str
    module: str
    function: str
    needs_root: bool = False

    def render(self, root: Path) -> str:
        fn = getattr(importlib.import_module(f"clkt.reference.{self.module}"), self.function)
        text = fn(root) if self.needs_root else fn()
        assert isinstance(text, str)
        return text


GENERATED: tuple[Generated, ...] = (
    Generated(path="docs/reference/cli.md", module="cli_page", function="render_cli"),
    Generated(path="docs/reference/config.md", module="config_page", function="render_config"),
    Generated(path="docs/reference/pack-format.md", module="formats_page", function="render_pack_format"),
    Generated(path="docs/reference/snapshot-layout.md", module="formats_page", function="render_snapshot_layout"),
    Generated(path="docs/reference/sql-views.md", module="sql_page", function="render_sql_views"),
    Generated(path="docs/reference/metrics.md", module="metrics_page", function="render_metrics"),
    Generated(path="docs/benchmarks.md", module="bench_page", function="render_results", needs_root=True),
    Generated(path="clkt.example.toml", module="example_config", function="render_example"),
)


def generate(root: Path) -> dict[str, str]:
    """Every generated file's path (relative to `root`) and its text as the code gives it now."""
    return {g.path: g.render(root) for g in GENERATED}


def stale(root: Path, fresh: dict[str, str] | None = None) -> list[str]:
    """The generated files under `root` that are missing or differ from a fresh generation (`fresh`, else made)."""
    fresh = generate(root) if fresh is None else fresh
    out = []
    for path, text in fresh.items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            out.append(path)
    return out


def write(root: Path) -> list[str]:
    """Write every generated file that changed; the paths written. Each file is replaced whole (a temporary file
    renamed over it), so a failed generation leaves the old files as they were."""
    fresh = generate(root)  # everything rendered before anything is written
    changed = stale(root, fresh)
    for path in changed:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(fresh[path], encoding="utf-8")
        tmp.replace(target)
    return changed
