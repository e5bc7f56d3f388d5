"""The domain registry: every domain that is one folder, each declared by its package's `SPEC`.

Adding a domain is its folder plus one line in `_BUILT_IN`. `clkt.facts` (the facts union, the slots),
`clkt.config` (the `[sources.<name>]` tables, the default quotas) and each side's registry (documents, templates,
control makers, sources) loop over `DOMAINS`. A test registers a toy domain with `register` (from its own tree)
before those modules are imported, or rebuilds what it needs.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from clkt.domains import science, spaceflight
from clkt.domains.spec import DomainSpec

__all__ = ["DOMAINS", "DomainSpec", "import_side", "register"]

_BUILT_IN: tuple[DomainSpec, ...] = (
    science.SPEC,
    spaceflight.SPEC,
)

DOMAINS: dict[str, DomainSpec] = {}


def register(spec: DomainSpec) -> DomainSpec:
    """Adds `spec` to the registry; a second domain of the same name, kind or source is refused by name."""
    for other in DOMAINS.values():
        clash = [what for what, a, b in (("name", spec.name, other.name), ("kind", spec.kind, other.kind),
                                         ("source", spec.source, other.source)) if a == b]
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


for _spec in _BUILT_IN:
    register(_spec)
