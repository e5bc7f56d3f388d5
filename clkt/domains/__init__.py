"""The domain registry: every domain that is one folder, each declared by its package's `SPEC`.

Adding a domain is its folder plus one line in `_BUILT_IN`. `clkt.facts` (the facts union, the slots, the
`Domain` enum), `clkt.config` (the `[sources.<name>]` tables, the default quotas), each side's registry (documents,
templates, control makers, sources) and the replay server (`clkt.replay.domains`) loop over `DOMAINS`, which is
complete once this package is imported: those modules build their types from it at their own import.

A domain outside the product (a test's toy, a site's own) is a package named in the environment variable
`CLKT_DOMAIN_PACKAGES` (comma-separated, each declaring `SPEC`), registered after the built-in ones; a name that
does not import or declares no `DomainSpec` stops the import with an error naming it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from clkt.domains import disasters, movies, music, science, spaceflight, sports
from clkt.domains.spec import DomainSpec

__all__ = ["DOMAINS", "PACKAGES_ENV", "DomainSpec", "import_side", "register"]

PACKAGES_ENV = "CLKT_DOMAIN_PACKAGES"  # more domain packages, comma-separated

_BUILT_IN: tuple[DomainSpec, ...] = (
    movies.SPEC,
    music.SPEC,
    sports.SPEC,
    disasters.SPEC,
    science.SPEC,
    spaceflight.SPEC,
)

DOMAINS: dict[str, DomainSpec] = {}


def register(spec: DomainSpec) -> DomainSpec:
    """Adds `spec` to the registry; a second domain of the same name, kind or source is refused by name."""
    for other in DOMAINS.values():
        shared = {s for s, _ in spec.sources} & {s for s, _ in other.sources}
        kinds = set(spec.kind_names) & set(other.kind_names)
        clash = [what for what, same in (("name", spec.name == other.name), ("kind", bool(kinds)),
                                         ("source", bool(shared))) if same]
        if clash and other != spec:
            raise ValueError(f"domain {spec.name!r}: its {clash[0]} is already domain {other.name!r}'s")
    DOMAINS[spec.name] = spec
    return spec


def import_side(side: str) -> list[ModuleType]:
    """Imports every registered domain's module of `side` ("document", "templates"...) where it has one: the
    module registers itself in that side's registry."""
    out = []
    for spec in DOMAINS.values():
        try:
            out.append(importlib.import_module(spec.module(side)))
        except ModuleNotFoundError as e:
            if e.name != spec.module(side):
                raise
    return out


def _named_in_env() -> list[DomainSpec]:
    """The `SPEC` of every package named in `CLKT_DOMAIN_PACKAGES`."""
    out = []
    for name in (n.strip() for n in os.environ.get(PACKAGES_ENV, "").split(",")):
        if not name:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as e:
            raise ImportError(f"{PACKAGES_ENV}: domain package {name!r} does not import: {e}") from e
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, DomainSpec):
            raise TypeError(f"{PACKAGES_ENV}: {name!r} declares no `SPEC` (its `DomainSpec`)")
        out.append(spec)
    return out


for _spec in (*_BUILT_IN, *_named_in_env()):
    register(_spec)
