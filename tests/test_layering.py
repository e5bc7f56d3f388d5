"""The dependency rule of the layout (README, Layout), kept by reading every import of the product (at the root
of tests/ because it is cross-cutting: it reads every module).

- Only `storage/` talks SQL: nothing else imports SQLAlchemy, SQLModel, alembic, the tables
  (`storage.models`) or the lease machinery (`storage.claim`).
- `storage/` and `agents/` import from `clkt` only its kernel (facts, documents, the agents' typed
  outputs, LLM call records, errors, config, logs and redaction); `storage/` imports nothing from `agents/` and `agents/` nothing from `storage/`; the kernel
  imports nothing above it.
- Nothing imports `run_daemon` (it is an entry point only).
- No import cycles between modules (imports inside functions and under TYPE_CHECKING count too).
- The floors (`FLOORS`): no area imports an area on a higher floor. Scoring sits below reporting, reporting
  below the GPU queue and publishing, those below retention (which keeps the GPU jobs' folders) and the pages,
  those below the wiring
  (`clkt.services`), the wiring below the daemon and the CLI. What joins two areas on one floor, or a lower
  area to a higher one, is a hook wired in `clkt.services` (the GPU consumer's commit hook runs retention: inject
  does not import retention).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import pytest

from clkt.domains.spec import SIDES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clkt", "agents", "storage")
KERNEL = (
    "clkt.errors", "clkt.clock", "clkt.config", "clkt.logs", "clkt.facts", "clkt.documents", "clkt.outputs", "clkt.calls",
    "clkt.layout", "clkt.section", "clkt.domain_base", "clkt.domains",
)
# a domain folder (`clkt.domains.<name>`) holds one module per side of the layering, sorted by file name
# (`clkt.domains.spec.SIDES`): each is checked as a module of its side's area; the others are kernel
DOMAIN_AREAS = {"agents": "agents.template", "sources": "clkt.sources", "snapshots": "clkt.snapshots",
                "replay": "clkt.replay", "openqa": "clkt.openqa"}
# the tables: `storage.models` and the modules it registers that hold tables only
SQL = ("sqlalchemy", "sqlmodel", "alembic", "storage.models", "storage.claim", "storage._columns", "storage.llm_tables",
       "storage.open_result_table", "storage.pack_tables", "storage.publish_tables")

Imports = dict[str, list[tuple[str, int]]]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def side_name(module: str) -> str:
    """`module`'s name in the graph: a domain folder's module of a side above the kernel as a module of that
    side's area (`clkt.domains.science.source` -> `clkt.sources.domain_science`), anything else as it is."""
    parts = module.split(".")
    if len(parts) == 4 and parts[:2] == ["clkt", "domains"]:
        area = DOMAIN_AREAS.get(SIDES.get(parts[3], "kernel"))
        if area is not None:
            return f"{area}.domain_{parts[2]}"
    return module


def _sources(root: Path) -> dict[str, Path]:
    """The modules under `root`: `run_daemon` (when there) and every module of the packages, migrations aside."""
    out = {"run_daemon": root / "run_daemon.py"} if (root / "run_daemon.py").exists() else {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*.py")):
            if "migrations" in p.parts:
                continue
            out[_module_name(p, root)] = p
    return out


def _imports(name: str, path: Path, known: Collection[str]) -> Iterator[tuple[str, int]]:
    """Every module `name` imports (absolute names), with its line; `from x import y` yields x.y when that is a
    module of `known` (the product's), else x."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                full = f"{base}.{a.name}"
                yield (full if full in known else base), node.lineno


def build_graph(root: Path, *, known: Collection[str] = ()) -> tuple[dict[str, Path], Imports]:
    """The modules under `root` and what each imports; `from x import y` resolves against the modules found
    under `root` and `known` (a probe tree in tmp_path resolves against the product's modules)."""
    modules = _sources(root)
    names = set(modules) | set(known)
    graph = {side_name(name): [(side_name(d), line) for d, line in _imports(name, path, names)]
             for name, path in modules.items()}
    return {side_name(name): path for name, path in modules.items()}, graph


def _within(mod: str, prefixes: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


MODULES, GRAPH = build_graph(ROOT)


def _violations(
    select_module: Callable[[str], bool], forbidden: Callable[[str, str], bool],
    *, graph: Imports = GRAPH, modules: dict[str, Path] = MODULES, root: Path = ROOT,
) -> list[str]:
    out = []
    for name, deps in graph.items():
        if not select_module(name):
            continue
        for dep, line in deps:
            if forbidden(name, dep):
                out.append(f"{modules[name].relative_to(root)}:{line} imports {dep}")
    return sorted(out)


def test_the_graph_sees_the_product() -> None:
    assert len(MODULES) > 150
    assert any(dep == "sqlalchemy.ext.asyncio" for dep, _ in GRAPH["storage.engine"])  # the parser sees imports


def test_only_storage_talks_sql() -> None:
    assert _violations(lambda m: not m.startswith("storage"), lambda _m, d: _within(d, SQL)) == []


def test_storage_and_agents_import_only_the_kernel_of_clkt() -> None:
    def bad(m: str, d: str) -> bool:
        if _within(d, ("clkt",)) and d != "clkt" and not _within(d, KERNEL):
            return True
        return (_within(m, ("storage",)) and _within(d, ("agents",))) or (_within(m, ("agents",)) and _within(d, ("storage",)))

    assert _violations(lambda m: _within(m, ("storage", "agents")), bad) == []


def test_the_kernel_imports_nothing_above_it() -> None:
    def bad(_m: str, d: str) -> bool:
        return _within(d, ("storage", "agents")) or (_within(d, ("clkt",)) and d != "clkt" and not _within(d, KERNEL))

    assert _violations(lambda m: _within(m, KERNEL), bad) == []


def test_nothing_imports_the_entry_point() -> None:
    assert _violations(lambda m: True, lambda _m, d: _within(d, ("run_daemon",))) == []


def _cycles() -> list[list[str]]:
    edges = {m: sorted({d for d, _ in deps if d in MODULES and d != m}) for m, deps in GRAPH.items()}
    # a package's __init__ that only re-exports counts as its modules: skip the edge parent -> child
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan, iterative enough for this graph's depth
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


# the areas by floor, lowest first: a module may import its own floor and the ones below, never one above (the
# package `clkt` itself is its root, `__version__`: the ground floor; an area not listed is not checked)
FLOORS: tuple[tuple[str, ...], ...] = (
    ("clkt", *KERNEL, "clkt._tasks", "clkt.owner"),
    ("storage", "agents"),
    ("clkt.context", "clkt.telemetry", "clkt.targets", "clkt.cutoff", "clkt.messages", "clkt.daemon_info"),
    ("clkt.sources", "clkt.pipeline", "clkt.snapshots", "clkt.replay"),
    ("clkt.evaluate", "clkt.roster"),
    ("clkt.report",),
    ("clkt.inject", "clkt.publish", "clkt.status", "clkt.incontext", "clkt.packs"),
    ("clkt.retention", "clkt.web", "clkt.progress", "clkt.endpoint", "clkt.diskwatch"),  # retention keeps inject's folders
    ("clkt.services", "clkt.preflight"),
    ("clkt.daemon", "clkt.process", "clkt.cli", "run_daemon"),
    ("clkt.reference",),  # the generated documentation reads every layer (the CLI's commands, the store's views)
)
_FLOOR = {area: n for n, areas in enumerate(FLOORS) for area in areas}


def floor_of(module: str) -> int | None:
    """The floor of the area `module` belongs to (the longest listed prefix; `clkt` only as itself)."""
    best = None
    for area in _FLOOR:
        if (module == area or (area != "clkt" and module.startswith(area + "."))) and (best is None or len(area) > len(best)):
            best = area
    return _FLOOR[best] if best is not None else None


def _upward(module: str, dep: str) -> bool:
    below, above = floor_of(module), floor_of(dep)
    return below is not None and above is not None and above > below


def test_every_floor_names_areas_of_the_product() -> None:
    for area in _FLOOR:
        assert any(m == area or m.startswith(area + ".") for m in MODULES), f"{area} is not a module of the product"


def test_no_area_imports_one_on_a_higher_floor() -> None:
    assert _violations(lambda m: True, _upward) == []


def test_inject_imports_neither_retention_nor_the_wiring() -> None:
    """The one import that ran back up the floors: the GPU consumer's commit calls a hook instead."""
    above = ("clkt.retention", "clkt.services", "clkt.web", "clkt.cli", "clkt.daemon")
    assert _violations(lambda m: _within(m, ("clkt.inject",)), lambda _m, d: _within(d, above)) == []


@pytest.mark.parametrize(
    ("bad", "dep"),
    [("from sqlalchemy import select", "sqlalchemy"), ("import storage.models", "storage.models"),
     ("from storage import claim", "storage.claim")],
)
def test_the_rule_catches_a_violation(tmp_path: Path, bad: str, dep: str) -> None:
    probe = tmp_path / "clkt" / "layering_probe.py"  # a module of clkt, outside the checkout
    probe.parent.mkdir()
    probe.write_text(bad + "\n", encoding="utf-8")
    modules, graph = build_graph(tmp_path, known=MODULES)
    assert list(modules) == ["clkt.layering_probe"]
    found = _violations(lambda m: m == "clkt.layering_probe", lambda _m, d: _within(d, SQL),
                        graph=graph, modules=modules, root=tmp_path)
    assert found == [f"clkt/layering_probe.py:1 imports {dep}"]


@pytest.mark.parametrize(
    ("module", "text", "caught"),
    [
        ("clkt.inject.layering_probe", "from clkt.retention.apply import after_job_commit", True),
        ("clkt.inject.layering_probe", "def f():\n    import clkt.services", True),  # inside a function too
        ("clkt.report.layering_probe", "from clkt.web import views", True),
        ("clkt.retention.layering_probe", "from clkt.layout import job_dir", False),
        ("clkt.inject.layering_probe", "from clkt.evaluate.results import ResultItem", False),
    ],
)
def test_the_floors_catch_an_upward_import(tmp_path: Path, module: str, text: str, caught: bool) -> None:
    path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text(text + "\n", encoding="utf-8")
    modules, graph = build_graph(tmp_path, known=MODULES)
    assert list(modules) == [module]
    found = _violations(lambda m: m == module, _upward, graph=graph, modules=modules, root=tmp_path)
    assert bool(found) is caught, found


def test_a_domain_folder_is_sorted_by_file_name() -> None:
    """Each side's module of a domain folder is checked as its side's: a template module is agents', a poller
    the sources' floor, so a facts module that imported the poller would be an upward import of the kernel."""
    assert side_name("clkt.domains.science.templates") == "agents.template.domain_science"
    assert side_name("clkt.domains.science.source") == "clkt.sources.domain_science"
    assert side_name("clkt.domains.science.facts") == "clkt.domains.science.facts"  # kernel
    assert "clkt.snapshots.domain_spaceflight" in MODULES and "clkt.domains.spaceflight.facts" in MODULES


def test_a_kernel_module_of_a_domain_folder_may_not_import_its_poller(tmp_path: Path) -> None:
    probe = tmp_path / "clkt" / "domains" / "probe" / "facts.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from clkt.domains.science.source import ArxivSource\n", encoding="utf-8")
    modules, graph = build_graph(tmp_path, known=MODULES)
    assert list(modules) == ["clkt.domains.probe.facts"]
    found = _violations(lambda m: m == "clkt.domains.probe.facts", _upward, graph=graph, modules=modules, root=tmp_path)
    assert found == ["clkt/domains/probe/facts.py:1 imports clkt.sources.domain_science"]
