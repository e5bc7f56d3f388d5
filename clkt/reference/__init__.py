"""The documentation generated from the code: the reference pages, the benchmarks page and `clkt.example.toml`.

`python -m clkt.reference --write` writes every generated file; `--check` writes nothing and exits 1 naming each
file that differs from what the code gives now (CI runs it in `make docs`, and tests/docs keep the committed files
equal to a fresh generation). Output is deterministic: nothing depends on the time or the machine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GENERATED", "Generated", "generate", "stale", "write"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Generated:
    """One generated file: its path under the repository root and what renders it (given the root)."""

    path: str
    render: Callable[[Path], str]


def _cli(_root: Path) -> str:
    from clkt.reference.cli_page import render_cli

    return render_cli()


def _config(_root: Path) -> str:
    from clkt.reference.config_page import render_config

    return render_config()


def _pack(_root: Path) -> str:
    from clkt.reference.formats_page import render_pack_format

    return render_pack_format()


def _snapshot(_root: Path) -> str:
    from clkt.reference.formats_page import render_snapshot_layout

    return render_snapshot_layout()


def _sql(_root: Path) -> str:
    from clkt.reference.sql_page import render_sql_views

    return render_sql_views()


def _metrics(_root: Path) -> str:
    from clkt.reference.metrics_page import render_metrics

    return render_metrics()


def _benchmarks(root: Path) -> str:
    from clkt.reference.bench_page import render_benchmarks

    return render_benchmarks(root / "bench" / "results")


def _example(_root: Path) -> str:
    from clkt.reference.example_config import render_example

    return render_example()


GENERATED: tuple[Generated, ...] = (
    Generated(path="docs/reference/cli.md", render=_cli),
    Generated(path="docs/reference/config.md", render=_config),
    Generated(path="docs/reference/pack-format.md", render=_pack),
    Generated(path="docs/reference/snapshot-layout.md", render=_snapshot),
    Generated(path="docs/reference/sql-views.md", render=_sql),
    Generated(path="docs/reference/metrics.md", render=_metrics),
    Generated(path="docs/benchmarks.md", render=_benchmarks),
    Generated(path="clkt.example.toml", render=_example),
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
