"""docs/benchmarks.md: the latest run of every bench, rendered from `bench/results/*.json`.

A results file holds one JSON record per line, one per run, newest last (`{"bench", "figures", "goals", "met"}` and
whatever else the bench records), or one JSON document. Shapes differ from bench to bench and files are data: each is
read as it is, what it has is shown (its conditions, figures, goals and whether they were met), a line or a file that
does not parse is named, never a crash. History stays in the files; the page shows the last run of each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clkt.reference._text import code, escape, generated_header, table

__all__ = ["read_runs", "render_benchmarks", "render_results"]

# the figures that say under which conditions a run was taken (shown with the conditions, not as results)
CONDITION_KEYS = ("at", "commit", "commit_base", "conditions", "date", "machine", "device", "processor", "cpus", "load_1m",
                  "torch_threads", "kind", "label", "run")
MAX_ROWS = 40  # figures shown per bench; the rest are in the file
MAX_LIST = 12  # a list of at most this many plain values is shown inline
MAX_TEXT = 200

_INTRO = """\
The latest run of every bench (`bench/*.py`), rendered from `bench/results/*.json`: each results file keeps every run,
one JSON line each, newest last, and this page shows only the last one with the conditions it recorded (machine,
load, commit, n). Timings are of the machine named, often a loaded 2-core one: compare runs of one machine only.
Regenerate with `python -m clkt.reference --write` after a bench appends a run.
"""


def read_runs(path: Path) -> tuple[list[Any], list[int]]:
    """Every record of a results file, in order, and the numbers of the lines that do not parse."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return [json.loads(text)], []
    except ValueError:
        pass
    runs, bad = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                runs.append(json.loads(line))
            except ValueError:
                bad.append(number)
    return runs, bad


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def flatten(value: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """(dotted key, shown value) of every plain value in `value`; long lists and deep tables are summed up."""
    if isinstance(value, dict) and depth < 4:
        return [row for k, v in value.items() for row in flatten(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)]
    if isinstance(value, list) and len(value) <= MAX_LIST and all(not isinstance(x, dict | list) for x in value):
        return [(prefix, ", ".join(_show(x) for x in value) or "[]")]
    if isinstance(value, list):
        return [(prefix, f"a list of {len(value)} items (in the file)")]
    if isinstance(value, dict):
        return [(prefix, f"a table of {len(value)} keys (in the file)")]
    return [(prefix, _show(value))]


def _rows(pairs: list[tuple[str, str]]) -> list[list[str]]:
    return [[code(k) if k else "&mdash;", escape(v)] for k, v in pairs]


def _figures(run: dict[str, Any]) -> str:
    figures = run.get("figures")
    conditions = [(k, v) for k, v in flatten({k: v for k, v in run.items() if k not in ("bench", "figures", "goals", "met")})]
    if isinstance(figures, dict):
        conditions += [(k, v) for k, v in flatten({k: figures[k] for k in CONDITION_KEYS if k in figures})]
        shown = flatten({k: v for k, v in figures.items() if k not in CONDITION_KEYS})
    else:
        shown = flatten(figures) if figures is not None else []
    out = ""
    if conditions:
        out += "Conditions:\n\n" + table(["", "value"], _rows(conditions)) + "\n"
    if shown:
        more = f" (the first {MAX_ROWS} of {len(shown)}; the rest are in the file)" if len(shown) > MAX_ROWS else ""
        out += f"Figures{more}:\n\n" + table(["figure", "value"], _rows(shown[:MAX_ROWS])) + "\n"
    return out


def _goals(run: dict[str, Any]) -> str:
    goals = run.get("goals")
    met = run.get("met")
    out = f"Goals met: **{'yes' if met is True else 'no' if met is False else 'not recorded'}**.\n\n"
    if isinstance(goals, dict) and goals:
        measured = dict(flatten(run.get("figures")))
        rows = [[*row, escape(measured.get(k, "")) or "&mdash;"] for (k, _), row in zip(flatten(goals), _rows(flatten(goals)), strict=True)]
        out += table(["goal", "target", "measured"], rows) + "\n"
    elif goals is not None:
        out += f"Goals: {escape(_show(goals))}\n\n"
    return out


def _bench(path: Path) -> str:
    runs, bad = read_runs(path)
    out = f"## {escape(path.stem)}\n\n"
    dicts = [r for r in runs if isinstance(r, dict)]
    out += f"`bench/results/{path.name}`: {len(runs)} run(s) recorded"
    out += f"; line(s) {', '.join(map(str, bad))} do not parse" if bad else ""
    out += ".\n\n"
    if not dicts:
        return out + "No run record to show.\n\n"
    latest = dicts[-1]
    if "figures" not in latest and "bench" not in latest:
        keys = ", ".join(code(k) for k in list(latest)[:MAX_LIST])
        return out + f"Not a bench run record (no `bench` or `figures`): a document with the keys {keys}.\n\n"
    if isinstance(latest.get("bench"), str) and latest["bench"] != path.stem:
        out += f"Bench {code(latest['bench'])}.\n\n"
    return out + _goals(latest) + _figures(latest)


def render_benchmarks(results: Path) -> str:
    """The page, from every `*.json` file directly in `results` (sorted by name)."""
    paths = sorted(results.glob("*.json"))
    return generated_header("Benchmarks", _INTRO) + "".join(_bench(p) for p in paths)


def render_results(root: Path) -> str:
    """The page of the repository at `root`: its `bench/results/`."""
    return render_benchmarks(root / "bench" / "results")
